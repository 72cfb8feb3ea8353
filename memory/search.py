"""The words of a query: which words it searches for and which it excludes.

Every search is matched in process over the word index (memory.lexical_index): agents' rankings
(memory.retrieval) and the console's every-word filter (memory.word_filter) alike. The database
keeps no full-text index (migration 0012 dropped it): keeping one was most of an import's work.
"""

from __future__ import annotations

import re

from memory.query_limits import MAX_TERMS
from memory.stopwords import STOP_WORDS

_WORD_RE = re.compile(r"\w+", re.UNICODE)
# "-word" at the start of the query or after a space excludes items with that word.
_EXCLUDED_RE = re.compile(r"(?:^|(?<=\s))-(\w+)", re.UNICODE)
MAX_TERM_LENGTH = 64


def terms(query: str) -> list[str]:
    """The searchable words of a query, bounded in number and length, duplicates dropped."""
    words = [w[:MAX_TERM_LENGTH] for w in _WORD_RE.findall(query) if w.strip("_")]
    return list(dict.fromkeys(w.casefold() for w in words))[:MAX_TERMS]


def excluded(query: str) -> list[str]:
    """The words the query excludes, written `-word`."""
    words = [w[:MAX_TERM_LENGTH].casefold() for w in _EXCLUDED_RE.findall(query) if w.strip("_")]
    return list(dict.fromkeys(words))[:MAX_TERMS]


def keywords(query: str) -> list[str]:
    """The words of a query that say what it is about: its terms less stop words and exclusions.

    A query of stop words alone keeps them, so that it still searches for something.
    """
    unwanted = set(excluded(query))
    words = [w for w in terms(query) if w not in unwanted]
    return [w for w in words if w not in STOP_WORDS] or words
