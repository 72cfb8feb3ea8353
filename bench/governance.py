"""Governance benchmark: what the write path does with attacks and honest notes from a trusted agent.

    python bench/governance.py                          # this checkout, the repo's corpus
    python bench/governance.py --code /tmp/base         # another checkout (the baseline), same corpus
    python bench/governance.py --jsonl data.jsonl --text-field text --label-field label
                                                        # an outside labelled corpus (label 1: attack)

Every case is proposed as an `add_fact` from the high-trust `claude` zone with trusted evidence,
through `proposal_submit`, and consolidated; then the proposals' statuses are counted. It runs on
a fresh SQLite database in a temporary directory, so it never touches a real one. The table:

- malicious: published without review (the target is 0), held for review, rejected;
- benign: refused (rejected; the target is <= 1%), held (with the signals that held them),
  published.

Only the service functions present since the first release are used, so an older checkout can be
measured with the same script as the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def _cases(args: argparse.Namespace) -> list[tuple[str, bool]]:
    """(text, is_attack) for every case of the chosen corpus."""
    if args.jsonl:
        cases: list[tuple[str, bool]] = []
        with open(args.jsonl, encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    row = json.loads(line)
                    text = str(row.get(args.text_field) or "").strip()
                    if text:
                        label = row.get(args.label_field)
                        attack = str(label).lower() in {"1", "true", "injection", "jailbreak", "malicious"}
                        cases.append((text[:8000], attack))
        return cases[: args.limit] if args.limit else cases
    corpus = HERE / "tests" / "corpus"
    out: list[tuple[str, bool]] = []
    for name, attack in (("attacks", True), ("benign", False)):
        with (corpus / f"{name}.jsonl").open(encoding="utf-8") as lines:
            out.extend((json.loads(line)["text"], attack) for line in lines if line.strip())
    return out


def django_on(code: Path, database: Path) -> None:
    """Set Django up from the checkout `code` on a fresh SQLite `database`, migrated."""
    os.chdir(code)
    sys.path.insert(0, str(code))
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
    os.environ.setdefault("UNFORGETTER_TESTING", "1")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _run(cases: list[tuple[str, bool]]) -> dict[str, Any]:
    from django.contrib.auth.models import User

    from memory.models import Proposal
    from memory.services import consolidation_run, proposal_submit
    from workspaces.models import Connection, DataClass
    from workspaces.selectors import agent_scope
    from workspaces.services import project_create, token_issue, workspace_create

    owner = User.objects.create_user(username=f"bench-{uuid.uuid4().hex[:8]}")
    workspace = workspace_create(slug=f"gov-{uuid.uuid4().hex[:8]}", name="Governance", owner=owner)
    project_create(workspace=workspace, slug="platform", name="Platform", data_class=DataClass.INTERNAL)
    connection = token_issue(
        workspace=workspace,
        actor="claude-code@alice",
        zone="claude",
        role=Connection.Role.CONTRIBUTOR,
        data_classes=[DataClass.PUBLIC, DataClass.INTERNAL],
    ).connection
    scope = agent_scope(connection)
    refs: list[tuple[str, bool]] = []
    refused_at_submit = Counter[bool]()
    started = time.perf_counter()
    for text, attack in cases:
        try:
            submitted = proposal_submit(
                scope=scope,
                project_id="platform",
                request_id=f"gov-{uuid.uuid4()}",
                op="add_fact",
                text=text,
                evidence=[{"ref": "notes/team-sync.md", "trust": "trusted"}],
            )
        except Exception:
            refused_at_submit[attack] += 1
            continue
        refs.append((submitted.proposal.ref, attack))
    consolidation_run(workspace_id=workspace.pk, wait=True)
    elapsed = time.perf_counter() - started
    rows = {
        p.ref: p for p in Proposal.objects.filter(workspace=workspace).only("ref", "status", "reason", "text")
    }
    counts: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    held_why: Counter[str] = Counter()
    for ref, attack in refs:
        proposal = rows[ref]
        counts[attack][proposal.status] += 1
        if not attack and proposal.status == Proposal.Status.AWAITING_REVIEW:
            for signal in getattr(proposal, "signals", None) or [{"label": "(not recorded)"}]:
                held_why[signal["label"]] += 1
    for attack, n in refused_at_submit.items():
        counts[attack]["rejected"] += n
    return {"counts": counts, "held_why": held_why, "elapsed": elapsed, "total": len(cases)}


def _print(result: dict[str, Any], label: str) -> None:
    counts: dict[bool, Counter[str]] = result["counts"]
    malicious, benign = counts[True], counts[False]
    m_total, b_total = sum(malicious.values()), sum(benign.values())

    def pct(n: int, total: int) -> str:
        return f"{n} ({100 * n / total:.1f}%)" if total else "0"

    print(f"\nGovernance: {label} ({result['total']} cases, {result['elapsed']:.1f}s)\n")
    print("| what | count | target |")
    print("|---|---|---|")
    print(f"| malicious published without review | {pct(malicious['published'], m_total)} | 0 |")
    print(f"| malicious held for review | {pct(malicious['awaiting_review'], m_total)} | |")
    print(f"| malicious rejected | {pct(malicious['rejected'], m_total)} | |")
    print(f"| benign refused (rejected) | {pct(benign['rejected'], b_total)} | <= 1% |")
    print(f"| benign held for review | {pct(benign['awaiting_review'], b_total)} | |")
    print(f"| benign published | {pct(benign['published'], b_total)} | |")
    if result["held_why"]:
        why = ", ".join(f"{label} {n}" for label, n in result["held_why"].most_common())
        print(f"\nBenign held, by signal (a proposal may carry several): {why}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--code", type=Path, default=HERE, help="the checkout to measure (default: this one)")
    parser.add_argument("--jsonl", help="an outside labelled corpus instead of the repo's")
    parser.add_argument("--text-field", default="text")
    parser.add_argument("--label-field", default="label")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    cases = _cases(args)
    with tempfile.TemporaryDirectory() as tmp:
        django_on(args.code.resolve(), Path(tmp) / "governance.sqlite3")
        result = _run(cases)
    _print(result, f"code at {args.code.resolve()}" + (f", corpus {args.jsonl}" if args.jsonl else ""))


if __name__ == "__main__":
    main()
