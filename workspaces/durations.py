"""Durations as operators write them: `90s`, `15m`, `12h`, `30d`."""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION_RE = re.compile(r"^\s*(\d{1,7})\s*([smhd])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> timedelta:
    match = _DURATION_RE.match(text)
    if not match:
        raise ValueError(
            f"{text!r} is not a duration: write a whole number and a unit, e.g. 90s, 15m, 12h, 30d."
        )
    value = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    if value <= timedelta(0):
        raise ValueError("A duration must be longer than zero.")
    return value


def format_duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
