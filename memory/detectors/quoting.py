# ruff: noqa: RUF001
"""Attacks quoted as examples: a threat model, a tokenizer's special tokens, a JSON-RPC sample.

A threat-model note that quotes "ignore previous instructions" is not an attack by its author, but
the quoted string is still the payload once another agent reads it. Such a note is neither
published unseen nor refused: it is held for the owner. ``quoted_example`` says whether a text is
such a note: the attack disappears once quoted spans and code are removed, and the text frames
what it quotes as an example.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from memory.detectors.normalisation import View, word_set

_QUOTED_RE: Final = re.compile(
    r"```[\s\S]{0,20000}?```|~~~[\s\S]{0,20000}?~~~|`[^`\n]{1,2000}`|\"[^\"\n]{1,2000}\"|“[^”\n]{1,2000}”"
    r"|«[^»\n]{1,2000}»|„[^“”\n]{1,2000}[“”]|「[^」\n]{1,2000}」|『[^』\n]{1,2000}』|‘[^’\n]{1,2000}’"
    r"|(?<![A-Za-z])'[^'\n]{8,2000}'(?![A-Za-z])"
)
_FRAMING: Final = word_set(
    """example examples e g eg such as like quote quoted quotes quoting threat threats model attack attacks
    attacker attackers payload payloads injection injections phishing redteam red team detector detectors
    pattern patterns signature signatures sample samples fixture fixtures tokenizer tokenizers special
    token tokens jsonrpc json rpc schema request requests format template templates documented docs
    incident postmortem seen saw observed blocked flagged beispiel exemple ejemplo exemplo пример 例如 例"""
)


def quoted_example(text: str, view: View, is_attack: Callable[[str], bool]) -> re.Match[str] | None:
    """The quoted span that attacks (else the first quoted span) if ``text`` only attacks inside
    quotes and frames them as examples."""
    if _FRAMING.isdisjoint(view.words):
        return None
    spans = list(_QUOTED_RE.finditer(text))
    if not spans:
        return None
    outside = _QUOTED_RE.sub(" ", text)
    if is_attack(outside):
        return None
    return next((m for m in spans if is_attack(m.group())), spans[0])
