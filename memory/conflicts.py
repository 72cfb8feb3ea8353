"""Conflicts by content: an update that leans on an older decision to overturn a newer one.

Newer decisions win. The consolidator already rejects an update whose base moved on; this catches
the update whose base is current but whose *reason* is older than it: the text or evidence cites
an item version that was superseded or retracted before the base was made, or a date before the
base ("as decided on 2024-03-01"). Either way the agent is reviving a decision the team already
replaced; it should re-read the current one and propose against it. Pure: the consolidator passes
in the items the proposal cites.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any, Final, Protocol

_DECIDED: Final = (
    r"(?:decided|decision|agreed|approved|ruled|resolved|per|according\s+to|adr|minutes|"
    r"meeting|beschlossen|entschieden|décidé|decidido|decidimos|решено|決定|决定)"
)


def _date(n: str) -> str:
    return rf"(?P<y{n}>(?:19|20)\d\d)-(?P<m{n}>[01]?\d)-(?P<d{n}>[0-3]?\d)(?!\d)"


_DATED_DECISION_RE: Final = re.compile(
    rf"\b{_DECIDED}\b[^\n;]{{0,40}}?{_date('')}|{_date('2')}[^\n;]{{0,20}}?\b{_DECIDED}\b", re.IGNORECASE
)


class Cited(Protocol):
    ref: str
    state: str
    created_at: datetime

    @property
    def is_live(self) -> bool: ...


def _dates(text: str) -> Iterable[date]:
    for match in _DATED_DECISION_RE.finditer(text):
        year, month, day = (match.group(g) or match.group(f"{g}2") for g in ("y", "m", "d"))
        try:
            yield date(int(year), int(month), int(day))
        except (TypeError, ValueError):
            continue


def older_decision_cited(
    *, base: Cited, text: str, evidence: Iterable[Mapping[str, Any]], cited: Iterable[Cited]
) -> str | None:
    """Why an update of `base` rests on something older than `base`, or None."""
    for item in cited:
        if item.ref != base.ref and not item.is_live and item.created_at < base.created_at:
            return (
                f"It cites {item.ref}, which is {item.state} and older than {base.ref}: newer decisions "
                f"win. Re-read {base.ref} and propose against it."
            )
    made = base.created_at.date()
    texts = [text, *(str(e.get("text") or "") for e in evidence)]
    for value in texts:
        for when in _dates(value):
            if when < made:
                return (
                    f"It rests on a decision of {when.isoformat()}, older than {base.ref} "
                    f"({made.isoformat()}): newer decisions win. Re-read {base.ref} and propose against it."
                )
    return None
