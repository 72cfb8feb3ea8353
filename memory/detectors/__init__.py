"""Concrete prompt-injection and secret signals, and risk signals, for proposed memory items.

The consolidator calls :func:`assess` on every proposal before publishing it: a concrete attack or
secret rejects the proposal, a risk signal holds it for the owner's review. The package is pure
Python (standard library only, no Django) so it runs in any worker and is tested in isolation.
What is flagged and why, the false-positive rules, known limits and the performance budget are
written up in ``docs/detectors.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.detectors.injection import find_injection
from memory.detectors.normalisation import View, normalise, prepare
from memory.detectors.obfuscation import find_obfuscated
from memory.detectors.quoting import quoted_example
from memory.detectors.risk import Risk, find_risks, find_token_risks
from memory.detectors.secrets import find_secret, secret_spans
from memory.detectors.signal import Signal
from memory.detectors.spans import attack_span, excerpt

__all__ = [
    "Assessment",
    "Risk",
    "Signal",
    "assess",
    "attack_span",
    "excerpt",
    "find_attack",
    "find_injection",
    "find_secret",
    "normalise",
    "scan",
    "secret_spans",
]


@dataclass(frozen=True, slots=True)
class Assessment:
    """What the detectors make of one text: a concrete attack (or secret), and risk signals."""

    attack: Signal | None
    risks: tuple[Risk, ...]


def scan(text: str) -> Signal | None:
    """Return the first injection signal, else the first secret signal, else ``None``."""
    return find_injection(text) or find_secret(text)


def _injection(text: str, view: View) -> Signal | None:
    return find_injection(text, view) or find_obfuscated(text, view, find_injection)


def find_attack(text: str) -> Signal | None:
    """A concrete attack only (injection, also once decoded; then a secret): for evidence, which is
    shown to reviewers but not published, so quoting an attack there is not softened."""
    return _injection(text, prepare(text)) or find_secret(text)


def assess(text: str) -> Assessment:
    """Concrete attack first (injection, also once decoded; then a secret), and every risk signal.

    An injection that only appears inside quotes or code, in a text that frames it as an example
    (a threat model, a tokenizer's special tokens, a JSON-RPC sample), is held as a risk
    (`quoted_attack`) rather than rejected: quoted, it is still worth a look, but not a refusal.
    """
    view = prepare(text)
    attack = _injection(text, view)
    risks = find_risks(text, view)
    if attack is not None and attack.label != "hidden_unicode":
        quoted = quoted_example(text, view, lambda t: _injection(t, prepare(t)) is not None)
        if quoted is not None:
            detail = f"Quotes an attack as an example: {attack.detail}"
            start, end = quoted.span()
            risks.insert(0, Risk("quoted_attack", detail, excerpt(text, start, end), start, end))
            attack = None
    attack = attack or find_secret(text)
    risks.extend(find_token_risks(text))
    return Assessment(attack, tuple(risks))
