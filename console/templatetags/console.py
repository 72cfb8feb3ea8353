"""Small presentation helpers for the console templates."""

from __future__ import annotations

from datetime import timedelta

from django import template

from workspaces.durations import format_duration

register = template.Library()


@register.filter(name="duration")
def duration(value: timedelta | None) -> str:
    """A lifetime as operators write it (`30d`, `12h`); empty for none."""
    return format_duration(value) if isinstance(value, timedelta) else ""
