"""The new texts a measuring tool asks of a seeded database, and the project and workspace they go to.

`bench/context_trace.py` and `bench/ab.py` serve a database another benchmark seeded:
- "quality": `bench/quality.py`'s engineering corpus (English tasks and questions, each item's
  own phrasing, the last items' first: none of them a text quality.py asks);
- "run": `bench/run.py`'s (its generated sentences, 100k items in the first project of 1M, 500
  embedded), asked as run.py asks its own tasks and queries, none of them one it asks.
The generated sentences are words of a made-up vocabulary, which the model's tokenizer cuts into
about three times the word pieces of an English task of the same length (43 against 16 at the
median): their embedding takes about twice as long.
"""

from __future__ import annotations

import random
from typing import NamedTuple

import quality
import run
from corpus import TOOL_PHRASINGS, distinct_texts, generate

CORPORA = ("quality", "run")


class Asked(NamedTuple):
    texts: list[str]
    project: str
    workspace: str
    language: str  # how the texts read, for a table's title


def asked(corpus: str, tool: str, count: int, *, items: int = 100_000) -> Asked:
    """`count` new texts for `tool` (get_context's tasks or search_memory's queries)."""
    if corpus == "run":
        rng = random.Random(11)
        maker = run.TextMaker(run.vocabulary(4000, random.Random(20261130)), rng)
        if tool == "get_context":
            texts = [f"{maker.sentence(5, 14)} #t{i}" for i in range(count)]
        else:
            texts = [" ".join(maker.words_of(rng.randint(1, 2))) for _ in range(count)]
        return Asked(texts, run.project_slug(0), run.WORKSPACE, "generated")
    texts = distinct_texts(generate(items, questions=200), TOOL_PHRASINGS[tool][1])
    if len(texts) < count:
        raise SystemExit(f"the corpus has {len(texts)} distinct texts; {count} are needed")
    return Asked(texts[:count], quality.PROJECT, quality.WORKSPACE, "English")
