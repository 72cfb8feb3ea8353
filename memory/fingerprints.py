"""Near-copy fingerprints: which tainted item a text copies, however it was lightly edited.

A text is read as the detectors read it (`normalise`: NFKC, casefolded, look-alikes mapped, letter
spacing joined), split into words and then into overlapping three-word shingles. A MinHash of the
shingles gives `BANDS` numbers; two texts that share a good part of their shingles share a band
with high probability, so the bands of tainted items are stored (`TaintPrint`) and looked up by a
new proposal's bands; each candidate is then confirmed on the shingles themselves. Pure: no
database access.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from memory.detectors import normalise

BANDS: Final = 16
# A copy: this share of the tainted item's shingles in the new text, or this Jaccard overlap.
CONTAINMENT: Final = 0.6
_MAX_WORDS: Final = 3000
_PRIME: Final = (1 << 61) - 1
_WORD_RE: Final = re.compile(r"\w+")
# Fixed, arbitrary multipliers and offsets: the same text always gets the same bands.
_SEEDS: Final = tuple(
    (
        int.from_bytes(hashlib.blake2b(f"a{i}".encode(), digest_size=8).digest(), "big") % _PRIME | 1,
        int.from_bytes(hashlib.blake2b(f"b{i}".encode(), digest_size=8).digest(), "big") % _PRIME,
    )
    for i in range(BANDS)
)


def shingles(text: str) -> frozenset[int]:
    """The hashed three-word shingles of the text as the detectors read it (one for short texts)."""
    words = _WORD_RE.findall(normalise(text))[:_MAX_WORDS]
    grams = [" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))] if words else []
    return frozenset(
        int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "big") for gram in grams
    )


def bands(grams: frozenset[int]) -> list[int]:
    """The MinHash bands of a shingle set: BANDS numbers that fit a signed 64-bit column."""
    if not grams:
        return []
    return [
        (i << 56) | (min((a * g + b) % _PRIME for g in grams) & ((1 << 56) - 1))
        for i, (a, b) in enumerate(_SEEDS)
    ]


def copies(text_grams: frozenset[int], item_grams: frozenset[int]) -> bool:
    """Whether a text with these shingles is a near-copy of an item with those."""
    if not text_grams or not item_grams:
        return False
    shared = len(text_grams & item_grams)
    return shared >= CONTAINMENT * len(item_grams) or shared >= CONTAINMENT * len(text_grams | item_grams)
