"""BERT's uncased WordPiece tokenizer, read from a model's `tokenizer.json`, in plain Python.

The ids are those the `tokenizers` package gives for the same file (its BertNormalizer with
lowercasing and accent stripping, BertPreTokenizer, WordPiece model and [CLS]/[SEP] template,
truncated to a length): the tests compare the two on every Unicode code point and on the
corpora. Loaded and used once in a fresh process, that package took 12.2 MB (its library and the
tables it builds from the file) where this takes 2.8 MB, and it encodes a task in 12 us (the
package: 34 us).

The steps, as `tokenizers` runs them:

1. special tokens ([CLS], [SEP], [MASK], ...) are found in the text as written;
2. between them, control, format and private-use characters are dropped, whitespace becomes a
   space and each CJK ideograph is set apart by spaces;
3. the text is decomposed (NFD), its non-spacing marks (accents) dropped and each character
   lowercased on its own (a final capital sigma becomes the medial small one, where Python's
   `lower()` writes the final form);
4. it is split at spaces and around each punctuation mark;
5. each word becomes the longest vocabulary entries that spell it left to right (later pieces
   written `##piece`), or [UNK] if they cannot, or if it is over `max_input_chars_per_word`.

Which characters steps 2-4 drop or split is `tokenizers`' classification (memory.embeddings
.bert_characters), not Python's: their Unicode tables differ.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from memory.embeddings.bert_characters import DROPPED, NONSPACING, PUNCTUATION

# Unicode's White_Space characters that step 2 does not drop as controls first.
_WHITESPACE = frozenset(
    "\t\n\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# Ideographs, each set apart as a word of its own.
CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
# For text all in ASCII, steps 2-4 in two regular expressions: its controls (but tab, newline and
# carriage return) dropped, then words and punctuation marks found in the lowercased text.
_ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_WORDS = re.compile(r"[^\s!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]")

# What steps 2-4 do with a character beyond ASCII.
_KEEP, _DROP, _SPACE, _APART, _MARK, _PUNCTUATION = range(6)


class WordPiece:
    """`encode(text)`: the token ids of `text`, [CLS] first and [SEP] last, at most `max_tokens`."""

    def __init__(self, config: dict[str, Any], *, max_tokens: int) -> None:
        model = config["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"not a WordPiece tokenizer: {model.get('type')!r}")
        self._vocab: dict[str, int] = model["vocab"]
        self._unknown = self._vocab[model["unk_token"]]
        self._prefix: str = model["continuing_subword_prefix"]
        self._max_word: int = model["max_input_chars_per_word"]
        # No piece is longer than the longest entry: longer prefixes of a word are not tried.
        self._longest = max(len(token) for token in self._vocab)
        # Special tokens are found as written, before the text is normalised (step 1).
        special = {t["content"]: t["id"] for t in config.get("added_tokens") or [] if not t["normalized"]}
        self._special = special
        alternatives = "|".join(re.escape(t) for t in sorted(special, key=len, reverse=True))
        self._specials = re.compile(alternatives) if alternatives else None
        self._first, self._last = self._vocab["[CLS]"], self._vocab["[SEP]"]
        self._room = max_tokens - 2

    @classmethod
    def from_json(cls, text: str, *, max_tokens: int) -> WordPiece:
        return cls(json.loads(text), max_tokens=max_tokens)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part, special in self._parts(text):
            if special:
                ids.append(self._special[part])
            else:
                for word in words(part):
                    ids += self._pieces(word)
            if len(ids) >= self._room:
                break
        return [self._first, *ids[: self._room], self._last]

    def _parts(self, text: str) -> Iterator[tuple[str, bool]]:
        """The text between special tokens (False), and the special tokens (True)."""
        if self._specials is None:
            yield text, False
            return
        at = 0
        for found in self._specials.finditer(text):
            yield text[at : found.start()], False
            yield found.group(), True
            at = found.end()
        yield text[at:], False

    def _pieces(self, word: str) -> list[int]:
        """Step 5 for one word."""
        if len(word) > self._max_word:
            return [self._unknown]
        vocab, pieces, start = self._vocab, [], 0
        while start < len(word):
            end = min(len(word), start + self._longest)
            while end > start:
                found = vocab.get(word[start:end] if start == 0 else self._prefix + word[start:end])
                if found is not None:
                    pieces.append(found)
                    break
                end -= 1
            else:
                return [self._unknown]
            start = end
        return pieces


def words(text: str) -> list[str]:
    """Steps 2-4: the text's words and punctuation marks, normalised, in order."""
    if text.isascii():
        return _ASCII_WORDS.findall(_ASCII_CONTROLS.sub("", text).lower())
    # Normalised, the text's only whitespace is the spaces step 2 wrote.
    return "".join(f" {c} " if _kind(c) == _PUNCTUATION else c for c in _normalised(text)).split()


def _normalised(text: str) -> str:
    """Steps 2 and 3."""
    kept: list[str] = []
    for char in text:
        kind = _kind(char)
        if kind == _DROP:
            continue
        if kind == _SPACE:
            kept.append(" ")
        elif kind == _APART:
            kept += (" ", char, " ")
        else:
            kept.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(kept))
    stripped = "".join(char for char in decomposed if _kind(char) != _MARK)
    # Python lowercases a capital sigma ending a word to the final form; `tokenizers` lowercases
    # it alone, to the medial one.
    return stripped.replace("\u03a3", "\u03c3").lower()


@functools.lru_cache(maxsize=65_536)
def _kind(char: str) -> int:
    point = ord(char)
    if char in _WHITESPACE:
        return _SPACE
    if point < 0x80:
        if point < 0x20 or point == 0x7F:
            return _DROP
        return _KEEP if char.isalnum() else _PUNCTUATION
    if point in DROPPED:
        return _DROP
    if any(low <= point <= high for low, high in CJK):
        return _APART
    if point in NONSPACING:
        return _MARK
    if point in PUNCTUATION:
        return _PUNCTUATION
    return _KEEP
