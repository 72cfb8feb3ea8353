from __future__ import annotations

import json
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.worker import ConsolidatorLoop, consolidation_cycle


class Command(BaseCommand):
    help = (
        "Consolidate pending proposals and publish heartbeats: once (--once) or until stopped. "
        "Safe beside any other consolidator: each proposal is decided exactly once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--once", action="store_true", help="One cycle until nothing is pending, then exit."
        )
        parser.add_argument("--batch-size", type=int, default=None, help="Proposals claimed per transaction.")
        parser.add_argument("--json", action="store_true", help="With --once: print the report as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["once"]:
            report = consolidation_cycle(batch_size=options["batch_size"], wait=True)
            summary = {**report.consolidation.as_dict(), "heartbeats": report.heartbeats}
            if options["json"]:
                self.stdout.write(json.dumps(summary))
            else:
                c = report.consolidation
                self.stdout.write(
                    f"Consolidated {c.claimed} proposals: {c.published} published, "
                    f"{c.awaiting_review} awaiting review, {c.rejected} rejected; "
                    f"{report.heartbeats} heartbeat publications."
                )
            return
        loop = ConsolidatorLoop(batch_size=options["batch_size"])
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: loop.stop())
        self.stdout.write("Consolidating until stopped (Ctrl-C)...")
        self.stdout.flush()
        loop.run()
