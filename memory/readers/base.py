"""What every reader yields: one incoming item, not yet checked against the project it goes into.

A reader turns one format into `Incoming` items and names where each came from (`where`), so a
bad input is reported as `line 3: ...` or `notes/api.md: ...`. Readers validate shape only; the
import (memory/imports.py) validates kind, state and data class and decides identity.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any, NamedTuple

from workspaces.exceptions import InvalidRequest

# A foreign id: any printable string another tool uses as an item's identity.
MAX_FOREIGN_ID_LENGTH = 200
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


class Incoming(NamedTuple):
    """One item as a reader found it; `origin` is its identity in the tool it came from.

    A named tuple: an import makes one for each of its 100,000 items, and a frozen dataclass
    costs four times as much to make (each field set through `object.__setattr__`).
    """

    where: str
    kind: str
    text: str
    state: str | None = None
    data_class: str | None = None
    source: str = ""
    source_date: date | None = None
    actor: str = ""
    taint: str | None = None
    ref: str | None = None
    origin: str = ""
    supersedes: str | None = None


def bad(where: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{where}: {message}")


def foreign_id(value: Any, where: str, *, field: str = "id") -> str:
    """A foreign id as given: a non-empty printable string of a sane length (numbers are accepted)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise bad(where, f"{field!r} must be a string.")
    text = str(value).strip()
    if not text:
        raise bad(where, f"{field!r} is empty.")
    if len(text) > MAX_FOREIGN_ID_LENGTH:
        raise bad(where, f"{field!r} is longer than {MAX_FOREIGN_ID_LENGTH} characters.")
    if _CONTROL_RE.search(text):
        raise bad(where, f"{field!r} contains control characters.")
    return text


def iso_date(value: Any, where: str) -> date | None:
    """The date part of an ISO date or timestamp (`2026-01-02`, `2026-01-02T10:00:00Z`)."""
    if value in (None, ""):
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        raise bad(where, f"date {value!r} is not an ISO date (YYYY-MM-DD).") from None


def text_field(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str):
        raise bad(where, f"{field!r} must be a string.")
    return value
