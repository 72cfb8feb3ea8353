from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.services.taint_prints import prints_backfill, prints_missing
from workspaces.management.base import workspace_or_fail
from workspaces.management.progress import ProgressBar


class Command(BaseCommand):
    help = (
        "Record the near-copy fingerprints (taint prints) of tainted items that have none, such as "
        "items made before prints existed, so copying their text cannot launder their taint. "
        "Idempotent; safe to stop and run again, and beside the worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="Only this workspace (its slug); default: all of them.")
        parser.add_argument(
            "--batch-size", type=int, default=500, help="Items per transaction (default 500)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace_id = workspace_or_fail(options["workspace"]).pk if options["workspace"] else None
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        total = prints_missing(workspace_id)
        self.stdout.write(f"{total} tainted items have no taint prints.")
        started = time.monotonic()
        bar = ProgressBar("fingerprinting", total=total)
        # Off a terminal the bar draws nothing: with -v 2, a line per batch for logs instead.
        verbose = options["verbosity"] >= 2 and not bar.enabled

        def progress(done: int) -> None:
            bar.update(done)
            if verbose:
                self.stdout.write(f"  {done} / {total} items")

        try:
            done = prints_backfill(
                workspace_id=workspace_id, batch_size=options["batch_size"], progress=progress
            )
        finally:
            bar.close()
        self.stdout.write(f"Recorded taint prints for {done} items in {time.monotonic() - started:.1f}s.")
