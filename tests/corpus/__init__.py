"""The governance corpus: attacks and look-alike honest notes, as JSON lines (see README.md here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def load(name: str) -> list[dict[str, Any]]:
    """The cases of `attacks` or `benign`, in file order."""
    with (HERE / f"{name}.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]
