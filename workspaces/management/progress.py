"""A progress bar for long operator commands, drawn only on a terminal (never into logs or pipes)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """`  importing [#########.........]  45,000 / 100,000 items  (12,345/s)` on stderr, redrawn in place.

    Without a known total it shows the count and the rate. Off a terminal it draws nothing.
    """

    WIDTH = 28

    def __init__(
        self, label: str, *, total: int | None = None, unit: str = "items", stream: TextIO | None = None
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()
        self.drawn = False

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        rate = done / max(time.monotonic() - self.started, 1e-6)
        if self.total:
            filled = min(self.WIDTH, self.WIDTH * done // self.total)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            line = f"\r  {self.label} [{bar}] {done:>10,} / {self.total:,} {self.unit}  ({rate:,.0f}/s)"
        else:
            line = f"\r  {self.label} {done:>10,} {self.unit}  ({rate:,.0f}/s)"
        self.stream.write(line)
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
