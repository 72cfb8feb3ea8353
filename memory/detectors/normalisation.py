# ruff: noqa: RUF001
# (This module deliberately contains Cyrillic, Greek, CJK and full-width characters.)
"""Normalisation: the canonical text injection rules are matched against, and shared helpers.

``normalise`` folds a text (NFKC, invisible characters removed, casefolded, line breaks unified),
undoes letter-spacing, leetspeak and mixed-script look-alikes, and collapses whitespace; the steps
and why each is there are described in ``docs/detectors.md``. :func:`prepare` is the same work
without the final whitespace collapse, plus the text's word set, which every rule family uses as a
cheap gate; :class:`Gated` and :func:`anchored_matches` are how rules use that gate.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

# ---------------------------------------------------------------------------------------------------
# Word lists (shared by the rule modules)
# ---------------------------------------------------------------------------------------------------


def word_list(text: str) -> list[str]:
    """Whitespace-separated vocabulary (a helper, so word lists stay readable one-line strings)."""
    return text.split()


def word_set(text: str) -> frozenset[str]:
    """A whitespace-separated vocabulary as a set, for cheap membership and word-set gates."""
    return frozenset(word_list(text))


def alternation(phrases: Iterable[str]) -> str:
    """Regex alternation of plain phrases (longest first), with flexible whitespace between words."""
    ordered = sorted(set(phrases), key=len, reverse=True)
    return "|".join(r"\s+".join(re.escape(word) for word in phrase.split()) for phrase in ordered)


# Quotes and emphasis stripped from the ends of words before they are compared with a word list.
WORD_STRIP: Final = "'\"`*_“”‘’«»,"


# ---------------------------------------------------------------------------------------------------
# Invisible characters (also what the review console marks as hidden)
# ---------------------------------------------------------------------------------------------------

# Letters and marks that render as nothing although they are not format characters: the combining
# grapheme joiner and the Hangul fillers.
_BLANK_LETTERS: Final = "\u034f\u115f\u1160\u3164\uffa0"
# Invisible code points whose Unicode category does not give them away (U+180E, the Mongolian vowel
# separator, has been a format character only since Unicode 6.3): the blank letters, U+180E and
# the braille blank.
_INVISIBLE_EXTRA: Final = frozenset(map(ord, _BLANK_LETTERS)) | {0x180E, 0x2800}
# Whitespace an editor shows as such.
_ORDINARY: Final = frozenset("\n\t ")


def is_variation_selector(char: str) -> bool:
    """Whether ``char`` is a variation selector (VS1-VS16, or VS17-VS256 in the supplement)."""
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def is_hidden(char: str) -> bool:
    """Whether a reader would not see this character for what it is.

    The review console replaces every such character with a visible marker. This is broader than
    what normalisation removes: it includes controls, private-use and unassigned code points, and
    every space other than a plain one.
    """
    if char in _ORDINARY:
        return False
    if ord(char) in _INVISIBLE_EXTRA:
        return True
    if is_variation_selector(char):
        return True
    category = unicodedata.category(char)
    # Cf: format (zero-width, bidi controls, tag characters, soft hyphen); Cc: controls;
    # Co/Cn: private use and unassigned; Zs/Zl/Zp other than a plain space: look-alike spaces.
    return category in {"Cf", "Cc", "Co", "Cn", "Zs", "Zl", "Zp"}


# ---------------------------------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------------------------------

# Invisible characters removed before matching (a superset of what ``hidden_unicode`` reports).
# Spaces and controls are not removed: whitespace is collapsed later and line breaks matter to the
# line-start rules. The review console's notion of hidden is broader still: see ``is_hidden``.
_INVISIBLE_RE: Final = re.compile(
    f"[{_BLANK_LETTERS}\u00ad\u061c\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_ODD_NEWLINES_RE: Final = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_ODD_NEWLINE_CHARS: Final = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_VSPACE_RE: Final = re.compile(r"[^\S\n]*\n\s*")
_HSPACE_RE: Final = re.compile(r"[^\S\n]{2,}|[^\S \n]")

# "i g n o r e", "i.g.n.o.r.e": four or more single letters separated by one separator.
_SPACED_RE: Final = re.compile(r"(?<![a-z0-9])(?:[a-z][ .\-_*]){3,60}[a-z](?![a-z0-9])")
_SPACED_SEP_RE: Final = re.compile(r"[ .\-_*]")
_SINGLE_LETTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyz")

# Words that mix letters with leetspeak digits ("1gn0r3", "pr3v10us").
_LEET_RE: Final = re.compile(r"(?<![a-z0-9])(?:[a-z]{1,40}[013457]|[013457]{1,40}[a-z])[a-z0-9]{0,60}")
_LEET_TABLE: Final = str.maketrans("013457", "oieast")
_LEET_BYTES: Final = bytes.maketrans(b"013457", b"oieast")
# Leetspeak only matters if it hides one of these words.
_LEET_PROBES: Final = (b"ignor", b"instruct", b"prompt", b"you are now")

# Cyrillic / Greek / IPA look-alikes, mapped only inside words that also contain Latin letters.
_CONFUSABLES: Final = {
    "а": "a", "в": "b", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j", "к": "k", "м": "m",
    "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "һ": "h",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k",
    "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ı": "i", "ɡ": "g", "ɑ": "a",
    "ȷ": "j",
}  # fmt: skip
_CONFUSABLE_TABLE: Final = str.maketrans(_CONFUSABLES)
_CONFUSABLE_CLASS: Final = "".join(_CONFUSABLES)
_CONFUSABLE_RE: Final = re.compile(f"[{_CONFUSABLE_CLASS}]")
_MIXED_SCRIPT_RE: Final = re.compile(f"[a-z](?:(?=[{_CONFUSABLE_CLASS}])|(?<=[{_CONFUSABLE_CLASS}][a-z]))")
_WORD_RE: Final = re.compile(r"\w{1,100}")
_LATIN_RE: Final = re.compile(r"[a-z]")

# Word sets split on ASCII punctuation; other punctuation is stripped from the ends of words.
_ASCII_PUNCT: Final = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ASCII_PUNCT_TO_SPACE: Final = bytes.maketrans(_ASCII_PUNCT, b" " * len(_ASCII_PUNCT))
_UNICODE_PUNCT: Final = "“”‘’«»„…—–·•、。，：；！？（）「」『』【】"


# Frequent compatibility characters in LLM-written prose; replacing them first often lets NFKC be skipped.
_COMMON_COMPAT: Final = (
    ("…", "..."), ("\u00a0", " "), ("\u202f", " "), ("\u2009", " "), ("\u3000", " "), ("，", ","),
    ("：", ":"), ("；", ";"), ("！", "!"), ("？", "?"), ("（", "("), ("）", ")"),
)  # fmt: skip
# casefold() mappings that lower() misses and that matter for matching (lower() is ~3x faster):
# (single character to test for, text to replace, replacement). "İ".lower() is "i" + U+0307.
_CASEFOLD_EXTRA: Final = (
    ("ß", "ß", "ss"), ("ẞ", "ẞ", "ss"), ("ſ", "ſ", "s"), ("ς", "ς", "σ"), ("\u0307", "i\u0307", "i"),
)  # fmt: skip


def _fold(text: str) -> tuple[str, bool]:
    """NFKC, drop invisible characters, casefold, unify line breaks (whitespace is not collapsed).

    Returns the folded text and whether invisible/format characters were present.
    """
    if text.isascii():
        folded = text.lower()  # NFKC and casefold are no-ops beyond lower() for ASCII
        invisible = False
    else:
        folded = text
        for old, new in _COMMON_COMPAT:
            if old in folded:
                folded = folded.replace(old, new)
        if not unicodedata.is_normalized("NFKC", folded):
            folded = unicodedata.normalize("NFKC", folded)
        invisible = _INVISIBLE_RE.search(folded) is not None
        if invisible:
            folded = _INVISIBLE_RE.sub("", folded)
        folded = folded.lower()
        for probe, old, new in _CASEFOLD_EXTRA:
            if probe in folded:
                folded = folded.replace(old, new)
    if any(char in folded for char in _ODD_NEWLINE_CHARS):
        folded = _ODD_NEWLINES_RE.sub("\n", folded)
    return folded, invisible


def _join_spaced(match: re.Match[str]) -> str:
    return _SPACED_SEP_RE.sub("", match.group())


def _leet(match: re.Match[str]) -> str:
    return match.group().translate(_LEET_TABLE)


def _unconfuse(match: re.Match[str]) -> str:
    word = match.group()
    if _LATIN_RE.search(word):
        return word.translate(_CONFUSABLE_TABLE)
    return word


def _text_words(text: str) -> frozenset[str]:
    """The distinct words of ``text``, split on whitespace and punctuation."""
    if not text.isascii():
        for char in _UNICODE_PUNCT:
            if char in text:
                text = text.replace(char, " ")
    return frozenset(text.encode().translate(_ASCII_PUNCT_TO_SPACE).decode().split())


def _hides_leetspeak(text: str) -> bool:
    raw = text.encode("ascii", "replace")
    mapped = raw.translate(_LEET_BYTES)
    return mapped != raw and any(probe in mapped and probe not in raw for probe in _LEET_PROBES)


@dataclass(frozen=True, slots=True)
class View:
    """A text prepared for injection matching: folded, de-obfuscated where needed, and its words."""

    text: str
    words: frozenset[str]
    ascii: bool
    invisible: bool  # the original text contained invisible/format characters


def prepare(raw: str) -> View:
    """Fold and de-obfuscate ``raw`` for the injection rules (whitespace is not collapsed)."""
    text, invisible = _fold(raw)
    words = _text_words(text)
    changed = False
    if len(words & _SINGLE_LETTERS) >= 4 and _SPACED_RE.search(text):
        text = _SPACED_RE.sub(_join_spaced, text)
        changed = True
    is_ascii = text.isascii()
    if not is_ascii and _CONFUSABLE_RE.search(text) and _MIXED_SCRIPT_RE.search(text):
        text = _WORD_RE.sub(_unconfuse, text)
        changed = True
    if _hides_leetspeak(text):
        text = _LEET_RE.sub(_leet, text)
        changed = True
    return View(text, _text_words(text) if changed else words, is_ascii, invisible)


def normalise(text: str) -> str:
    """Return the canonical text that injection rules are matched against.

    NFKC, invisible/format characters removed, casefolded, line breaks unified, letter-spacing joined,
    leetspeak and mixed-script homoglyphs mapped to Latin, and whitespace collapsed (runs of horizontal
    whitespace become one space, runs containing a line break become one ``\\n``). The rules
    themselves are whitespace-agnostic, so the collapse is only applied to this public form.
    """
    folded = prepare(text).text
    folded = _VSPACE_RE.sub("\n", folded)
    folded = _HSPACE_RE.sub(" ", folded)
    return folded.strip()


# ---------------------------------------------------------------------------------------------------
# Gated matching (shared by the rule modules)
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Gated:
    """A regex that only runs when cheap pre-checks pass.

    Every word set in ``gates`` must share a word with the text, and ``needle`` (if any) must occur
    in it. This keeps typical texts down to a few set look-ups per rule family.
    """

    pattern: re.Pattern[str]
    gates: tuple[frozenset[str], ...] = ()
    needle: str = ""

    def search(self, view: View) -> re.Match[str] | None:
        if self.needle and self.needle not in view.text:
            return None
        for gate in self.gates:
            if gate.isdisjoint(view.words):
                return None
        return self.pattern.search(view.text)


def starts_word(text: str, index: int) -> bool:
    """Whether ``index`` is at the start of a word (not preceded by a letter or digit)."""
    return index == 0 or not text[index - 1].isalnum()


_WORD_BEGIN_RE: Final = re.compile(r"\b\w")


def anchored_matches(
    text: str, pattern: re.Pattern[str], words: Iterable[str], lookback: int = 0
) -> Iterator[re.Match[str]]:
    """Matches of ``pattern`` anchored where one of ``words`` starts a word in ``text``.

    Scanning a large alternation over the whole text is slow; anchoring it at the few places where a
    gate word occurs is not. With ``lookback``, the words starting up to that many characters
    earlier are tried too, for multi-word phrases whose gate word is not the first one.
    """
    tried: set[int] = set()
    for word in words:
        index = text.find(word)
        while index != -1:
            if starts_word(text, index):
                starts = [index]
                if lookback:
                    starts += [
                        m.start() for m in _WORD_BEGIN_RE.finditer(text, max(0, index - lookback), index)
                    ]
                for start in starts:
                    if start not in tried:
                        tried.add(start)
                        match = pattern.match(text, start)
                        if match is not None:
                            yield match
            index = text.find(word, index + 1)
