"""Where in the stored text a signal matched, so a reviewer sees the very characters that held it.

Rules match the folded text (``normalisation.prepare``), whose offsets differ from the stored
text's wherever folding changed its length (NFKC, invisible characters removed, letter spacing
joined, ``\\r\\n``). :func:`source_span` maps a folded span back; :func:`attack_span` finds, for a
detector that only answers yes or no, the shortest stretch of the text that it still flags on its
own. Both only run for a text that was flagged, and both are bounded (a binary search of at most
a few dozen detector or folding calls), so a clean proposal pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from memory.detectors.normalisation import View, prepare

EXCERPT_MAX: Final = 120
# Lines of a flagged text tried one by one before the whole text is searched instead.
_MAX_LINES: Final = 64


def excerpt(text: str, start: int, end: int) -> str:
    """The characters of ``text[start:end]`` on one line, at most EXCERPT_MAX of them."""
    snippet = " ".join(text[start:end].split())
    return snippet if len(snippet) <= EXCERPT_MAX else snippet[: EXCERPT_MAX - 1] + "…"


def _folded_length(raw: str, cut: int) -> int:
    return len(prepare(raw[:cut]).text)


def _first_cut(raw: str, at_least: int) -> int:
    """The shortest prefix of ``raw`` whose folded form is at least ``at_least`` long."""
    low, high = 0, len(raw)
    while low < high:
        middle = (low + high) // 2
        if _folded_length(raw, middle) >= at_least:
            high = middle
        else:
            low = middle + 1
    return low


def source_span(raw: str, view: View, start: int, end: int) -> tuple[int, int]:
    """The span of ``raw`` that folds to ``view.text[start:end]`` (exact where folding kept every
    length, which is nearly always; else the nearest prefix boundaries)."""
    if len(view.text) == len(raw):
        return start, end
    begin = max(0, _first_cut(raw, start + 1) - 1)
    stop = max(begin, _first_cut(raw, end))
    return begin, stop


def attack_span(text: str, is_attack: Callable[[str], bool]) -> tuple[int, int]:
    """A short stretch of ``text`` that ``is_attack`` flags on its own: the first flagged line if
    there is one, then trimmed from the front and from the back while it is still flagged."""
    begin, stop = 0, len(text)
    cursor = 0
    for tried, line in enumerate(text.splitlines(keepends=True)):
        if tried >= _MAX_LINES:  # bounded: past this, the binary search over the whole text
            break
        if line.strip() and is_attack(line):
            begin, stop = cursor, cursor + len(line.rstrip())
            break
        cursor += len(line)
    # The latest start that still flags, then the earliest end: each a binary search over offsets.
    low, high = begin, stop
    while low < high:
        middle = (low + high + 1) // 2
        if is_attack(text[middle:stop]):
            low = middle
        else:
            high = middle - 1
    begin = low
    low, high = begin, stop
    while low < high:
        middle = (low + high) // 2
        if is_attack(text[begin:middle]):
            high = middle
        else:
            low = middle + 1
    stop = max(low, begin)
    # Whole words: a detector that still flags "instruction" need not cut "instructions".
    while begin > 0 and text[begin - 1].isalnum() and text[begin].isalnum():
        begin -= 1
    while stop < len(text) and stop > 0 and text[stop].isalnum() and text[stop - 1].isalnum():
        stop += 1
    if not is_attack(text[begin:stop]):  # the detector is not monotone here: show the whole line
        return _whole(text, begin, stop)
    return begin, stop


def _whole(text: str, begin: int, stop: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, begin) + 1
    line_end = text.find("\n", stop)
    return line_start, len(text) if line_end == -1 else line_end
