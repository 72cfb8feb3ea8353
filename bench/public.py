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

REALTALK (`realtalk`; Lee et al., "REALTALK: A 21-Day Real-World Dataset for Long-Term
Conversation", arXiv 2502.13270; github.com/danny911kr/REALTALK). PATH is its `data` folder, one
`Chat_<n>_<a>_<b>.json` per pair of people who messaged each other for 21 days (real people, not
generated). Every message of every chat becomes an item ("Kevin: ...", dated by its message), all
chats in one project, as one memory serving many conversations; each `qa` entry is a question
whose relevant items are its `evidence` messages. Evidence is written by hand there ("D12:3-D12:5",
"D5:12;D5:16", "D5:3."): ranges are expanded, and ids that name no message are dropped, with the
questions left without evidence.
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
    asked_as: str = "question"  # what a question is in the benchmark's own terms, for the table


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
    return PublicSet("madial-bench", items, questions, asked_as="dialogue")


_SESSION = re.compile(r"session_\d+")
_EVIDENCE = re.compile(r"D(\d+):(\d+)(?:\s*-\s*D(\d+):(\d+))?")


def _evidence_ids(evidence: list[str]) -> Iterator[str]:
    """The message ids a hand-written evidence list names, ranges within one session expanded."""
    for written in evidence:
        for match in _EVIDENCE.finditer(str(written)):
            session, first, end_session, last = match.groups()
            if end_session == session and last is not None and int(first) <= int(last):
                yield from (f"D{session}:{n}" for n in range(int(first), int(last) + 1))
            else:
                yield f"D{session}:{first}"
                if end_session is not None:
                    yield f"D{end_session}:{last}"


def _message_date(stamp: str) -> str | None:
    """ "29.12.2023, 22:42:04" as an ISO date."""
    day, _, rest = stamp.partition(".")
    month, _, year = rest.partition(".")
    year = year[:4]
    return f"{year}-{month}-{day}" if year.isdigit() and month.isdigit() and day.isdigit() else None


def _realtalk_chat(path: Path) -> tuple[list[Item], list[Question]]:
    try:
        chat = json.loads(path.read_text(encoding="utf-8"))
        messages = [m for key, session in chat.items() if _SESSION.fullmatch(key) for m in session]
        items = [
            Item(
                f"realtalk/{path.stem}/{m['dia_id']}",
                f"{m['speaker']}: {m['clean_text']}",
                _message_date(m.get("date_time", "")),
            )
            for m in messages
            if m["clean_text"].strip()
        ]
        known = {item.source for item in items}
        questions = []
        for qa in chat["qa"]:
            relevant = {f"realtalk/{path.stem}/{i}" for i in _evidence_ids(qa.get("evidence") or [])}
            if relevant & known and qa["question"].strip():
                question = qa["question"].strip()
                questions.append(
                    Question(question[:QUERY_MAX], question[:TASK_MAX], frozenset(relevant & known))
                )
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
        raise DatasetError(f"{path}: not a REALTALK chat ({type(error).__name__}: {error}).") from None
    return items, questions


def load_realtalk(path: Path) -> PublicSet:
    chats = sorted(path.glob("Chat_*.json")) if path.is_dir() else []
    if not chats:
        raise DatasetError(f"{path} holds no Chat_*.json: --public-path must be REALTALK's data folder.")
    items: list[Item] = []
    questions: list[Question] = []
    for chat in chats:
        chat_items, chat_questions = _realtalk_chat(chat)
        items += chat_items
        questions += chat_questions
    return PublicSet("realtalk", items, questions)


LOADERS: dict[str, Callable[[Path], PublicSet]] = {"madial-bench": load_madial, "realtalk": load_realtalk}


def load(name: str, path: Path) -> PublicSet:
    if name not in LOADERS:
        raise DatasetError(f"unknown benchmark {name!r}; known: {', '.join(sorted(LOADERS))}.")
    return LOADERS[name](path)


def write_jsonl(dataset: PublicSet, path: Path) -> None:
    """The items as `import_memory` reads them (memory/readers/jsonl.py).

    The benchmark's id is each item's foreign id: two messages with the same words ("Kevin: yes")
    are two items, as they are two answers to check, where items without ids would be one.
    """
    with path.open("w", encoding="utf-8") as out:
        for item in dataset.items:
            row = {
                "kind": "fact",
                "text": item.text,
                "id": item.source,
                "source": item.source,
                "actor": "bench",
            }
            if item.date:
                row["date"] = item.date
            out.write(json.dumps(row) + "\n")
