"""The result of a detector: one reason to hold a proposal for the owner's review."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

KIND_INJECTION: Final = "injection"
KIND_SECRET: Final = "secret"  # noqa: S105 - a signal kind, not a credential


@dataclass(frozen=True, slots=True)
class Signal:
    """One reason to hold a proposal for the owner's review."""

    kind: str  # "injection" or "secret"
    label: str  # short machine label, e.g. "instruction_override" or "api_key"
    detail: str  # one human sentence; never contains the matched secret value
