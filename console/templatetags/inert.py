"""Render text an agent wrote as inert, escaped text.

Nothing an agent wrote is ever rendered as HTML or markdown. Characters a reader cannot see
(zero-width, bidirectional overrides, Unicode tag characters, odd spaces, controls) are replaced
by a visible marker such as `⟨U+202E⟩`, so a reviewer sees exactly what a model would read.
Which characters count as hidden is decided by `memory.detectors.normalisation.is_hidden`, next to
the detectors' own list of invisible characters.
"""

from __future__ import annotations

import re
import unicodedata

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memory.detectors.normalisation import is_hidden

register = template.Library()


def _marker(char: str) -> str:
    code = ord(char)
    name = unicodedata.name(char, "")
    label = f"U+{code:04X}"
    title = f"{label} {name}".strip() if name else f"{label} (hidden character)"
    return f'<span class="hidden-char" title="{escape(title)}">⟨{label}⟩</span>'


_HIDDEN_RUN = re.compile(r"[^\n\t !-~]")  # a fast pre-filter: anything outside printable ASCII


def inert_html(value: object) -> SafeString:
    """Escape `value` and make hidden characters visible. The result is safe HTML of plain text."""
    text = "" if value is None else str(value)
    if not _HIDDEN_RUN.search(text):
        return mark_safe(escape(text))  # noqa: S308 - escaped just now
    parts = []
    for char in text:
        parts.append(_marker(char) if is_hidden(char) else escape(char))
    return mark_safe("".join(parts))  # noqa: S308 - every piece escaped or a fixed marker


@register.filter(name="inert", is_safe=False)
def inert(value: object) -> SafeString:
    return inert_html(value)


def _signal_spans(signals: object, where: str, length: int) -> list[tuple[int, int]]:
    """The merged, in-bounds spans of the signals found in field `where`."""
    spans = []
    for signal in signals if isinstance(signals, list) else []:
        if isinstance(signal, dict) and signal.get("where") == where:
            start, end = signal.get("start"), signal.get("end")
            if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= length:
                spans.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def marked_html(value: object, signals: object, where: str = "change.text") -> SafeString:
    """`inert_html` of `value`, with the spans the detectors matched in it (signals recorded for
    field `where`) wrapped in <mark>. Every piece of the text is escaped; only the marks are HTML."""
    text = "" if value is None else str(value)
    parts: list[str] = []
    cursor = 0
    for start, end in _signal_spans(signals, where, len(text)):
        parts.append(inert_html(text[cursor:start]))
        parts.append(f'<mark class="signal-mark">{inert_html(text[start:end])}</mark>')
        cursor = end
    parts.append(inert_html(text[cursor:]))
    return mark_safe("".join(parts))  # noqa: S308 - every piece escaped or a fixed tag


@register.filter(name="marked", is_safe=False)
def marked(value: object, signals: object) -> SafeString:
    return marked_html(value, signals)


_MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MARKDOWN_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?:https?:)?//[^)]*\)")
_HTML_TAG = re.compile(r"<\s*/?\s*[a-zA-Z][^>]*>")
_URL = re.compile(r"https?://\S+", re.IGNORECASE)


def hazards_of(value: object) -> list[str]:
    """Short notes on what in `value` could act on a model or leak data if rendered."""
    text = "" if value is None else str(value)
    found = []
    hidden = sorted({f"U+{ord(c):04X}" for c in text if is_hidden(c)})
    if hidden:
        shown = ", ".join(hidden[:6]) + (" …" if len(hidden) > 6 else "")
        found.append(f"hidden characters ({shown})")
    if _MARKDOWN_IMAGE.search(text):
        found.append("markdown image (a possible exfiltration beacon)")
    elif _MARKDOWN_LINK.search(text):
        found.append("markdown link")
    if _HTML_TAG.search(text):
        found.append("HTML markup")
    if _URL.search(text) and not found:
        found.append("URL")
    return found


@register.filter(name="hazards")
def hazards(value: object) -> list[str]:
    return hazards_of(value)
