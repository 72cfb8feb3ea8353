"""Consolidation with the detectors: proposals per second of one worker, and what the detectors cost.

    python bench/consolidation.py                    # this checkout, 3,000 proposals
    python bench/consolidation.py --code /tmp/base   # another checkout (the baseline)
    python bench/consolidation.py --no-detectors     # the same run with the detectors stubbed out

Proposals are the repo corpus's honest notes (made unique) and two plain facts, all `add_fact`
from the high-trust `claude` zone with trusted evidence, seeded through `proposal_submit` on a
fresh SQLite database in a temporary directory; then one `consolidation_run` in this process is
timed. Two rates are printed: wall clock, and per CPU second of this process (SQLite runs in it,
so database work counts too), which is the steadier figure on a shared, loaded machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

from governance import django_on

HERE = Path(__file__).resolve().parent.parent
PLAIN = (
    "The staging database was moved to the eu-west cluster on Tuesday; connection strings are unchanged.",
    "Release 4.2 ships the new export format; the old one is read for two more versions.",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--code", type=Path, default=HERE, help="the checkout to measure (default: this one)")
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--no-detectors", action="store_true", help="stub the detectors out")
    args = parser.parse_args()
    with (HERE / "tests" / "corpus" / "benign.jsonl").open(encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines if line.strip()] + list(PLAIN) * 20
    with tempfile.TemporaryDirectory() as tmp:
        code = args.code.resolve()
        django_on(code, Path(tmp) / "consolidation.sqlite3")
        _measure(texts, args.count, stub=args.no_detectors, label=str(code))


def _measure(texts: list[str], count: int, *, stub: bool, label: str) -> None:
    from django.contrib.auth.models import User

    import memory.services.consolidation as consolidation
    from memory.services import consolidation_run, proposal_submit
    from memory.validation import Findings
    from workspaces.models import Connection, DataClass
    from workspaces.selectors import agent_scope
    from workspaces.services import project_create, token_issue, workspace_create

    owner = User.objects.create_user(username=f"bench-{uuid.uuid4().hex[:8]}")
    workspace = workspace_create(slug=f"c-{uuid.uuid4().hex[:8]}", name="Consolidation", owner=owner)
    project_create(workspace=workspace, slug="platform", name="Platform", data_class=DataClass.INTERNAL)
    scope = agent_scope(
        token_issue(
            workspace=workspace,
            actor="claude-code@alice",
            zone="claude",
            role=Connection.Role.CONTRIBUTOR,
            data_classes=[DataClass.PUBLIC, DataClass.INTERNAL],
        ).connection
    )
    for index in range(count):
        proposal_submit(
            scope=scope,
            project_id="platform",
            request_id=f"c-{uuid.uuid4()}",
            op="add_fact",
            text=f"{texts[index % len(texts)]} (note {index})",
            evidence=[{"ref": "notes/team-sync.md", "trust": "trusted"}],
        )
    if stub:
        setattr(consolidation, "proposal_findings", lambda **_: Findings(None, []))  # noqa: B010
    wall, cpu = time.perf_counter(), time.process_time()
    report = consolidation_run(workspace_id=workspace.pk, wait=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{label}{' (detectors stubbed out)' if stub else ''}: {report.claimed} proposals, "
        f"{report.claimed / wall:,.0f}/s wall clock, {report.claimed / cpu:,.0f}/s per CPU second "
        f"(published {report.published}, held {report.awaiting_review}, rejected {report.rejected})"
    )


if __name__ == "__main__":
    main()
