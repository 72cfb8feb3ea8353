"""The rows agents are shown: the columns of each current item a bundle or a search result
shows, read as plain tuples.

A bundle holds a few dozen items, chosen among a few hundred candidates; building a model
instance for each of them cost more than the statement that read them. The standing part and
the ranking both read exactly `COLUMNS`, the ranking only for the candidates it chose; a page
of search results reads the same columns of its items.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import NamedTuple

from memory.contract import ItemPayload
from memory.models import Fact, Taint, provenance_of


class Item(NamedTuple):
    id: int
    ref: str
    kind: str
    state: str
    text: str
    data_class: str
    taint: int
    source: str
    source_date: date | None
    actor: str
    origin: str
    created_at: datetime


# Field names of Fact, in Item's order.
COLUMNS: tuple[str, ...] = Item._fields
_TAINT_LABELS = {int(value): label for value, label in Taint.choices}


def item_of(fact: Fact) -> Item:
    """The Item of a Fact read with (at least) `COLUMNS`."""
    return Item(*(getattr(fact, column) for column in COLUMNS))


def taint_label(item: Item) -> str:
    """The item's taint as agents read it (Fact.taint_label)."""
    return _TAINT_LABELS[item.taint]


def item_payload(item: Item) -> ItemPayload:
    return {
        "ref": item.ref,
        "kind": item.kind,
        "state": item.state,
        "text": item.text,
        "data_class": item.data_class,
        "taint": taint_label(item),
        "provenance": provenance_of(item),
    }
