"""Highlighted excerpts of search results, marked by the same words the ranking matched.

A result's excerpt shows the words of the query `**like this**`: short items whole, longer ones as
the stretch of FRAGMENT_WORDS words holding the most matches, cut with "…". Words match as the
word index matches them (memory.lexical_index: casefolded, diacritics dropped, English-stemmed),
so "deploys" is marked for a query of "deployment", on SQLite and PostgreSQL alike, and without a
full-text statement per page (FTS5's snippet() re-runs the whole match: 9 ms for a ten-word
question at 100,000 items).
"""

from __future__ import annotations

import re

from memory.lexical_index import words

MARK = "**"
ELLIPSIS = "…"
# Items up to this many characters are shown whole; longer ones as a fragment of so many words.
WHOLE_EXCERPT_CHARS = 300
FRAGMENT_WORDS = 35

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def excerpt(text: str, query: str) -> str:
    """The text (or its best fragment) with the words of `query` marked."""
    wanted = set(words(query))
    spans = [match.span() for match in _WORD_RE.finditer(text)]
    stems = words(" ".join(text[start:end] for start, end in spans)) if spans else []
    # A word the tokeniser splits further (rare: letters with marks it drops) is not marked.
    hits = [i for i, stem in enumerate(stems) if stem in wanted] if len(stems) == len(spans) else []
    if len(text) <= WHOLE_EXCERPT_CHARS or not spans:
        return _marked(text, spans, hits, 0, len(text))
    first = _best_window(hits, len(spans))
    last = min(first + FRAGMENT_WORDS, len(spans)) - 1
    start, stop = spans[first][0], spans[last][1]
    body = _marked(text, spans, [i for i in hits if first <= i <= last], start, stop)
    return (ELLIPSIS if start > 0 else "") + body + (ELLIPSIS if stop < len(text) else "")


def _best_window(hits: list[int], count: int) -> int:
    """The first word of the FRAGMENT_WORDS-word stretch holding the most hits (the earliest)."""
    best, best_hits = 0, 0
    for i, first in enumerate(hits):
        inside = sum(1 for h in hits[i:] if h < first + FRAGMENT_WORDS)
        if inside > best_hits:
            best, best_hits = first, inside
    # A little context before the first match, as a reader expects.
    return max(0, min(best - 3, count - FRAGMENT_WORDS)) if best_hits else 0


def _marked(text: str, spans: list[tuple[int, int]], hits: list[int], start: int, stop: int) -> str:
    parts: list[str] = []
    position = start
    for i in hits:
        word_start, word_end = spans[i]
        parts += [text[position:word_start], MARK, text[word_start:word_end], MARK]
        position = word_end
    parts.append(text[position:stop])
    return "".join(parts).strip()
