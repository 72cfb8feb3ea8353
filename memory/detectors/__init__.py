"""Concrete prompt-injection and secret signals for proposed memory items.

The consolidator calls :func:`scan` on every proposal before publishing it. The package is pure
Python (standard library only, no Django) so it runs in any worker and is tested in isolation.
What is flagged and why, the false-positive rules, known limits and the performance budget are
written up in ``docs/detectors.md``.
"""

from __future__ import annotations

from memory.detectors.injection import find_injection
from memory.detectors.normalisation import normalise
from memory.detectors.secrets import find_secret
from memory.detectors.signal import Signal

__all__ = ["Signal", "find_injection", "find_secret", "normalise", "scan"]


def scan(text: str) -> Signal | None:
    """Return the first injection signal, else the first secret signal, else ``None``."""
    return find_injection(text) or find_secret(text)
