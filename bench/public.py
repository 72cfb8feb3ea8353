"""Public agent-memory benchmarks for `bench/quality.py --public NAME --public-path PATH`.

A loader turns a benchmark's own files (downloaded beforehand: nothing is fetched here) into
memory items, imported through `import_memory` like any user's memory, and questions whose
relevant items are known. The figures are then comparable with what the benchmark's authors and
other memory systems report, and they come from text nobody here wrote.

MADial-Bench (`madial-bench`; He et al., "MADial-Bench: Towards Real-world Evaluation of
Memory-Augmented Dialogue Generation", NAACL 2025; github.com/hejunqing/MADial-Bench, MIT
licence). PATH is its `data/en` folder: `MADial-Bench-en-memory.json` holds one memory a line
(`{"<id>": {"time", "scene", "emotion", "event"}}`), `MADial-Bench-en-dialogue.json` one dialogue a
line, with `test-turn` (the assistant turn that should bring a memory up) and `relevant-id` (the
memories that fit there). Each memory becomes an item dated by its `time`; each dialogue becomes a
question: the conversation before the test turn, speaker tags removed, is the get_context task,
and its most recent part that fits a search_memory query is the query.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# The MCP tools' own bounds on a query and a task (mcpbridge/schemas.py): a longer one is refused.
QUERY_MAX = 500
TASK_MAX = 2_000

_SPEAKER = re.compile(r"^<[^>]+>:\s*")
_MARKERS = {"<BOD>", "<EOD>"}


@dataclass(frozen=True)
class Item:
    source: str
    text: str
    date: str | None = None


@dataclass(frozen=True)
class Question:
    query: str
    task: str
    relevant: frozenset[str]


@dataclass(frozen=True)
class PublicSet:
    name: str
    items: list[Item]
    questions: list[Question]


def recall_ceiling(dataset: PublicSet, k: int) -> float:
    """The best recall@k possible: a question with more than k relevant items cannot reach 1."""
    return sum(min(k, len(q.relevant)) / len(q.relevant) for q in dataset.questions) / len(dataset.questions)


class DatasetError(Exception):
    """The files at the given path are not the benchmark's (missing, or not in its format)."""


def _json_lines(path: Path) -> Iterator[dict]:
    if not path.is_file():
        raise DatasetError(f"{path} not found: --public-path must be the benchmark's data folder.")
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{path}:{number}: not JSON ({error.msg}).") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: expected an object.")
            yield row


def tail(text: str, limit: int) -> str:
    """The end of `text` within `limit` characters, cut at a word boundary: the latest turns."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < len(cut) - 1 else cut


def _utterance(line: str) -> str:
    return _SPEAKER.sub("", line.strip()).strip().strip('"')


def load_madial(path: Path) -> PublicSet:
    items: list[Item] = []
    for row in _json_lines(path / "MADial-Bench-en-memory.json"):
        for memory_id, memory in row.items():
            try:
                items.append(Item(f"madial/{memory_id}", memory["event"], memory.get("time")))
            except (KeyError, TypeError):
                raise DatasetError(f"memory {memory_id!r} has no event text.") from None
    known = {item.source for item in items}
    questions: list[Question] = []
    for number, dialogue in enumerate(_json_lines(path / "MADial-Bench-en-dialogue.json"), start=1):
        try:
            turn = min(dialogue["test-turn"])
            relevant = frozenset(f"madial/{i}" for i in dialogue["relevant-id"])
            lines = dialogue["dialogue"][:turn]
        except (KeyError, TypeError, ValueError):
            raise DatasetError(f"dialogue {number} lacks dialogue, test-turn or relevant-id.") from None
        if not relevant <= known:
            raise DatasetError(f"dialogue {number} names memories that are not in the memory file.")
        said = " ".join(_utterance(line) for line in lines if line.strip() not in _MARKERS)
        if said:
            questions.append(Question(tail(said, QUERY_MAX), tail(said, TASK_MAX), relevant))
    if not items or not questions:
        raise DatasetError(f"{path} holds no memories or no dialogues.")
    return PublicSet("madial-bench", items, questions)


LOADERS: dict[str, Callable[[Path], PublicSet]] = {"madial-bench": load_madial}


def load(name: str, path: Path) -> PublicSet:
    if name not in LOADERS:
        raise DatasetError(f"unknown benchmark {name!r}; known: {', '.join(sorted(LOADERS))}.")
    return LOADERS[name](path)


def write_jsonl(dataset: PublicSet, path: Path) -> None:
    """The items as `import_memory` reads them (memory/readers/jsonl.py)."""
    with path.open("w", encoding="utf-8") as out:
        for item in dataset.items:
            row = {"kind": "fact", "text": item.text, "source": item.source, "actor": "bench"}
            if item.date:
                row["date"] = item.date
            out.write(json.dumps(row) + "\n")
