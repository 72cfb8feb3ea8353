"""Kinds, states and data classes as small integer codes, for the in-process indexes' numpy masks.

The word index (memory.lexical_index) and the vector index (memory.embeddings.index) keep one
uint8 code per row for each, and select rows with a lookup table indexed by those codes. A value
the tables do not know (a row written by a newer release) gets the last code, which no caller's
filter allows.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from memory.models import Kind, State
from workspaces.models import DataClass

KINDS = {value: code for code, value in enumerate(Kind.values)}
STATES = {value: code for code, value in enumerate(State.values)}
CLASSES = {value: code for code, value in enumerate(DataClass.values)}
KIND_NAMES = np.array([*Kind.values, ""], dtype=object)


def code(table: dict[str, int], value: str) -> int:
    """The value's code, or the unknown one."""
    return table.get(value, len(table))


def lookup(table: dict[str, int], values: Collection[str] | None) -> np.ndarray:
    """A lookup table by code: True for each of `values` (for every known value when None)."""
    mask = np.zeros(len(table) + 1, dtype=bool)
    if values is None:
        mask[: len(table)] = True
    else:
        mask[[table[v] for v in values if v in table]] = True
    return mask
