"""A generated engineering memory with known answers, for the retrieval-quality benchmark.

Every item is one attribute of one service ("invoice-worker-eu retries failed payments 5 times
with exponential backoff"). Services are named from shared parts, so each item shares most of its
words with hundreds of others and only the service's full name and the attribute tell it apart,
as in a real team's memory. Each attribute has four ways to ask for it:

- `keyword`: the words an engineer would type into a search box;
- `question`: a natural-language question using the item's own words;
- `paraphrase`: the same question in other words ("ship to prod" for "deployed to production");
- `task`: what an agent calling get_context would say it is about to do.

Generation is deterministic for a given size and seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

PREFIXES = [
    "invoice",
    "ledger",
    "billing",
    "payment",
    "refund",
    "checkout",
    "cart",
    "catalog",
    "pricing",
    "search",
    "ranking",
    "profile",
    "account",
    "session",
    "login",
    "signup",
    "email",
    "notification",
    "webhook",
    "report",
    "export",
    "import",
    "audit",
    "analytics",
    "metrics",
    "inventory",
    "shipping",
    "order",
    "fulfilment",
    "tax",
    "fraud",
    "risk",
    "identity",
    "consent",
    "media",
    "upload",
    "thumbnail",
    "transcode",
    "chat",
    "feed",
    "comment",
    "review",
    "rating",
    "coupon",
    "loyalty",
    "wallet",
    "payout",
    "settlement",
    "reconcile",
]
SUFFIXES = [
    "worker",
    "api",
    "gateway",
    "scheduler",
    "service",
    "consumer",
    "producer",
    "indexer",
    "cache",
    "proxy",
    "daemon",
    "sync",
    "router",
    "collector",
    "dispatcher",
    "bridge",
    "store",
    "engine",
    "monitor",
    "backend",
    "frontend",
    "adapter",
    "relay",
    "broker",
    "planner",
    "ingestor",
    "exporter",
]
REGIONS = ["eu", "us", "apac", "uk", "ca", "br", "in", "jp"]
TEAMS = [
    "atlas",
    "borealis",
    "cobalt",
    "delta",
    "ember",
    "falcon",
    "granite",
    "harbor",
    "ion",
    "juniper",
    "krypton",
    "lumen",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
DATABASES = ["PostgreSQL", "MySQL", "Cassandra", "DynamoDB", "MongoDB", "CockroachDB"]
LANGUAGES = [
    ("Go", "Bazel"),
    ("Python", "Poetry"),
    ("Rust", "Cargo"),
    ("Java", "Gradle"),
    ("TypeScript", "pnpm"),
]
QUEUES = ["RabbitMQ", "Kafka", "SQS", "NATS", "Pulsar"]
OBJECTS = ["payments", "orders", "messages", "events", "uploads", "jobs"]
TOOLS = ["ArgoCD", "Spinnaker", "Jenkins", "GitHub Actions", "Flux"]


@dataclass(frozen=True)
class Phrasings:
    text: str
    kind: str
    keyword: str
    question: str
    paraphrase: str
    task: str


Template = Callable[[str, random.Random], Phrasings]


def _retry(e: str, r: random.Random) -> Phrasings:
    obj, n, ms = r.choice(OBJECTS), r.randint(2, 9), r.choice([100, 200, 250, 500, 1000])
    return Phrasings(
        f"{e} retries failed {obj} {n} times with exponential backoff starting at {ms} ms.",
        "fact",
        f"{e} retries backoff",
        f"How many times does {e} retry failed {obj}, and with what backoff?",
        f"If {e} hits an error, how often does it try again and how long does it wait in between?",
        f"Change the retry policy of {e} for failed {obj}",
    )


def _deploy(e: str, r: random.Random) -> Phrasings:
    day, tool = r.choice(DAYS), r.choice(TOOLS)
    return Phrasings(
        f"{e} is deployed to production every {day} through the {tool} pipeline.",
        "convention",
        f"{e} deploy production",
        f"When is {e} deployed to production?",
        f"On which day of the week do we ship {e} to prod?",
        f"Ship a hotfix for {e} to prod",
    )


def _owner(e: str, r: random.Random) -> Phrasings:
    team = r.choice(TEAMS)
    return Phrasings(
        f"{e} is owned by the {team} team; escalations go to the {team} on-call rotation.",
        "fact",
        f"{e} owner team",
        f"Which team owns {e}?",
        f"Who is responsible for {e} and who do I page when it breaks?",
        f"Find who to page about an incident in {e}",
    )


def _database(e: str, r: random.Random) -> Phrasings:
    db, cluster = r.choice(DATABASES), r.randint(1, 40)
    return Phrasings(
        f"{e} stores its data in the {db} cluster number {cluster}.",
        "fact",
        f"{e} database cluster",
        f"Which database cluster does {e} store its data in?",
        f"Where does {e} keep its records persisted?",
        f"Plan a schema change for the tables of {e}",
    )


def _timeout(e: str, r: random.Random) -> Phrasings:
    n = r.choice([2, 3, 5, 10, 15, 30])
    return Phrasings(
        f"Outbound requests from {e} time out after {n} seconds.",
        "fact",
        f"{e} timeout requests",
        f"After how many seconds do requests from {e} time out?",
        f"How long does {e} wait for an answer before giving up on a call?",
        f"Tune the request timeout of {e}",
    )


def _cache(e: str, r: random.Random) -> Phrasings:
    obj, n = r.choice(OBJECTS), r.choice([1, 5, 10, 15, 30, 60])
    return Phrasings(
        f"{e} caches {obj} in Redis with a TTL of {n} minutes.",
        "fact",
        f"{e} cache ttl",
        f"What is the cache TTL of {e} in Redis?",
        f"How long can the copy of {obj} kept in memory by {e} be out of date?",
        f"Debug stale {obj} served from the cache of {e}",
    )


def _alert(e: str, r: random.Random) -> Phrasings:
    n = r.choice([1, 2, 5, 10])
    return Phrasings(
        f"An alert pages on-call when the error rate of {e} exceeds {n}% for five minutes.",
        "convention",
        f"{e} alert error rate",
        f"At what error rate does {e} alert?",
        f"How many failures does it take before someone gets woken up for {e}?",
        f"Adjust the paging threshold of {e}",
    )


def _language(e: str, r: random.Random) -> Phrasings:
    lang, build = r.choice(LANGUAGES)
    return Phrasings(
        f"{e} is written in {lang} and built with {build}.",
        "fact",
        f"{e} language build",
        f"What language is {e} written in, and how is it built?",
        f"Which programming stack and compiler toolchain does {e} use?",
        f"Upgrade the build toolchain of {e}",
    )


def _rate_limit(e: str, r: random.Random) -> Phrasings:
    n = r.choice([50, 100, 200, 500, 1000])
    return Phrasings(
        f"{e} rate-limits each tenant to {n} requests per second.",
        "fact",
        f"{e} rate limit tenant",
        f"What is the per-tenant rate limit of {e}?",
        f"How many calls a second can one customer make to {e} before it is throttled?",
        f"Raise the throttling ceiling of {e} for a large customer",
    )


def _queue(e: str, r: random.Random) -> Phrasings:
    old, new = r.sample(QUEUES, 2)
    return Phrasings(
        f"Decision: {e} moved its messages from {old} to {new} for ordering guarantees.",
        "decision",
        f"{e} {new} messages",
        f"Why did {e} move its messages to {new}?",
        f"Which broker does {e} publish through these days, and what did it use before?",
        f"Migrate the consumers of {e} off {old}",
    )


TEMPLATES: list[Template] = [
    _retry,
    _deploy,
    _owner,
    _database,
    _timeout,
    _cache,
    _alert,
    _language,
    _rate_limit,
    _queue,
]
PHRASINGS = ("keyword", "question", "paraphrase", "task")


def services(count: int) -> list[str]:
    names = [f"{p}-{s}-{r}" for r in REGIONS for p in PREFIXES for s in SUFFIXES]
    if count > len(names):
        raise SystemExit(f"at most {len(names)} services can be named")
    return names[:count]


@dataclass
class Corpus:
    items: list[Phrasings]
    # Indexes into items whose phrasings are asked.
    asked: list[int]


def generate(size: int, *, questions: int = 200, seed: int = 20261202) -> Corpus:
    """`size` items (every attribute of size // 10 services), and `questions` of them to ask."""
    rng = random.Random(seed)
    items = [template(name, rng) for name in services(-(-size // len(TEMPLATES))) for template in TEMPLATES]
    items = items[:size]
    rng.shuffle(items)
    return Corpus(items=items, asked=rng.sample(range(len(items)), min(questions, len(items))))


# Each MCP tool that ranks, its argument, and the phrasing of an item it is asked with.
TOOL_PHRASINGS = {"get_context": ("task", "task"), "search_memory": ("query", "question")}


def distinct_texts(corpus: Corpus, phrasing: str) -> list[str]:
    """Every item's `phrasing`, once each, the last items' first (those no question asks)."""
    return list(dict.fromkeys(getattr(item, phrasing) for item in reversed(corpus.items)))


def write_jsonl(corpus: Corpus, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i, item in enumerate(corpus.items):
            row = {"kind": item.kind, "text": item.text, "source": f"corpus/{i}", "actor": "bench"}
            out.write(json.dumps(row) + "\n")


def sources(corpus: Corpus) -> Iterator[tuple[int, str]]:
    for i in corpus.asked:
        yield i, f"corpus/{i}"
