"""Injection: invisible characters that can hide or reorder text.

Runs on the original text (folding removes these characters). Legitimate uses, such as ZWJ in
emoji or ZWNJ in Persian, are allowed; the list is in ``docs/detectors.md``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from memory.detectors.normalisation import is_variation_selector
from memory.detectors.signal import KIND_INJECTION, Signal

_HIDDEN_CANDIDATE_RE: Final = re.compile(
    "[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff"
    "\uffa0\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
# Fast path for the most common benign cases: ZWJ between emoji, one VS16 after a visible character.
_EMOJI: Final = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u2bff\u3030\u303d\u3297\u3299"
    "\U0001f000-\U0001faff"
)
_EMOJI_JOINER_RE: Final = re.compile(
    f"\u200d(?<=[{_EMOJI}\ufe0f]\u200d)(?=[{_EMOJI}])|\ufe0f(?<=[^\\s\ufe00-\ufe0f]\ufe0f)(?![\ufe00-\ufe0f])"
)
_FLAG_TAG_SEQUENCE_RE: Final = re.compile(
    "\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,7}\U000e007f"
)
_RTL_RE: Final = re.compile(
    "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]"
)


def _is_emoji_part(char: str) -> bool:
    return char in "\ufe0f\u20e3" or unicodedata.category(char) in ("So", "Sk")


def _is_joining_script(char: str) -> bool:
    """Letters/marks of scripts that legitimately use ZWJ/ZWNJ (Arabic, Persian, Indic, ...)."""
    code = ord(char)
    in_range = (
        0x0590 <= code <= 0x0DFF
        or 0x0E00 <= code <= 0x109F
        or 0x1780 <= code <= 0x18AF
        or 0xA800 <= code <= 0xABFF
        or 0xFB1D <= code <= 0xFDFF
        or 0xFE70 <= code <= 0xFEFC
        or 0x10A00 <= code <= 0x11FFF
    )
    return in_range and unicodedata.category(char)[0] in "LM"


def _hidden_char_is_benign(text: str, index: int, flag_spans: list[tuple[int, int]]) -> bool:
    char = text[index]
    code = ord(char)
    prev_char = text[index - 1] if index > 0 else ""
    next_char = text[index + 1] if index + 1 < len(text) else ""
    if code == 0xFEFF:
        return index == 0
    if code in (0x200C, 0x200D):  # ZWNJ / ZWJ
        if not (prev_char and next_char):
            return False
        if code == 0x200D and _is_emoji_part(prev_char) and _is_emoji_part(next_char):
            return True
        return _is_joining_script(prev_char) and _is_joining_script(next_char)
    if code in (0x200E, 0x200F, 0x061C):  # LRM / RLM / ALM in genuinely bidirectional text
        return _RTL_RE.search(text) is not None
    if is_variation_selector(char):  # a single selector right after a visible base character
        return (
            bool(prev_char)
            and not prev_char.isspace()
            and not is_variation_selector(prev_char)
            and not (next_char and is_variation_selector(next_char))
        )
    if code == 0x180E:
        return bool(prev_char) and 0x1800 <= ord(prev_char) <= 0x18AF
    if 0xE0000 <= code <= 0xE007F:
        return any(start <= index < end for start, end in flag_spans)
    return False


def find_hidden_unicode(text: str) -> Signal | None:
    """Report invisible characters, skipping the legitimate uses listed in ``docs/detectors.md``.

    Only called when folding found invisible characters, so the common case costs nothing here.
    """
    flag_spans = [m.span() for m in _FLAG_TAG_SEQUENCE_RE.finditer(text)] if "\U0001f3f4" in text else []
    first: str | None = None
    count = 0
    for match in _HIDDEN_CANDIDATE_RE.finditer(text):
        index = match.start()
        if _EMOJI_JOINER_RE.match(text, index) or _hidden_char_is_benign(text, index, flag_spans):
            continue
        count += 1
        if first is None:
            first = match.group()
    if first is None:
        return None
    name = unicodedata.name(first, "FORMAT CHARACTER")
    return Signal(
        KIND_INJECTION,
        "hidden_unicode",
        f"Contains {count} invisible or bidi-control character(s) (first: U+{ord(first):04X} {name}) "
        "that can hide or reorder text.",
    )
