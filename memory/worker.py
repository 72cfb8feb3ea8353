"""Running the consolidator: one cycle, a loop of cycles, and the embedded worker thread.

A cycle consolidates every workspace with pending proposals, then publishes heartbeats that are
due. The same cycle runs in three places: a Celery worker and beat when CELERY_BROKER_URL is set
(memory.tasks), the serving process itself when it is not (the embedded default, started from the
ASGI lifespan), and `manage.py consolidate` from a shell. Any number of them may run at once:
each batch is claimed exactly once (see memory.services.proposals).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections, connections

from memory import dispatch
from memory.embeddings.shared import EmbedderUnavailable
from memory.services import (
    ConsolidationReport,
    consolidation_run,
    publication_heartbeat,
    workspaces_pending,
)
from memory.services.embeddings import embeddings_prune, embeddings_refresh
from workspaces.services import workspace_deletions_purge

logger = logging.getLogger(__name__)

IDLE_WAIT = 1.0  # seconds between cycles when nothing wakes the loop
# After a nudge, wait this long before the cycle so that proposals arriving together are claimed
# in one batch: under load, one cycle per proposal would cost the serving process more than the
# proposals themselves.
GATHER = 0.05
PURGE_EVERY = 3600.0  # seconds between purges of deleted workspaces' exports (as Celery beat)
# Items embedded per cycle at most (about a second of the local model's time), so a large import
# is embedded over the following cycles without holding up the proposals that arrive meanwhile.
EMBED_PER_CYCLE = 64


@dataclass
class CycleReport:
    consolidation: ConsolidationReport = field(default_factory=ConsolidationReport)
    heartbeats: int = 0


def consolidation_cycle(
    *, heartbeat: bool = True, batch_size: int | None = None, wait: bool = False
) -> CycleReport:
    """Consolidate every workspace with pending proposals, then publish the heartbeats due.

    With `wait`, a workspace another worker is consolidating is waited for rather than skipped.
    """
    report = CycleReport()
    for workspace_id in workspaces_pending():
        report.consolidation.add(
            consolidation_run(workspace_id=workspace_id, batch_size=batch_size, wait=wait)
        )
    if heartbeat:
        report.heartbeats = publication_heartbeat()
    return report


class ConsolidatorLoop:
    """Cycles until stopped: at once when woken, else every IDLE_WAIT seconds.

    Heartbeats are published from here at most every HEARTBEAT_TICK, so any cadence of at least
    twice the tick keeps `compiled_at` within the cadence.
    """

    def __init__(
        self,
        *,
        batch_size: int | None = None,
        idle_wait: float = IDLE_WAIT,
        enabled: Callable[[], bool] = lambda: True,
    ) -> None:
        self.batch_size = batch_size
        self.idle_wait = idle_wait
        # Read before every cycle: the embedded worker pauses while settings say it is off.
        self.enabled = enabled
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._cycle = threading.Lock()  # held for the whole of each cycle
        self._next_heartbeat = 0.0
        self._next_purge = 0.0
        # Items up to this id have been looked at for a vector (see embeddings_refresh).
        self._embedded_upto = 0
        self._pruned = False

    def wait_idle(self) -> None:
        """Return once no cycle is running (one starting later sees the settings of then)."""
        with self._cycle:
            pass

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run_once(self) -> CycleReport:
        now = time.monotonic()
        heartbeat = now >= self._next_heartbeat
        if heartbeat:
            self._next_heartbeat = now + settings.UNFORGETTER["HEARTBEAT_TICK"].total_seconds()
        if now >= self._next_purge:  # what Celery beat's hourly purge does, without a broker
            self._next_purge = now + PURGE_EVERY
            workspace_deletions_purge()
        report = consolidation_cycle(heartbeat=heartbeat, batch_size=self.batch_size)
        self._embed()
        return report

    def _embed(self) -> None:
        """Embed a batch of the items published or imported since the last cycle, off the request path."""
        try:
            embedded = embeddings_refresh(after=self._embedded_upto, limit=EMBED_PER_CYCLE)
        except EmbedderUnavailable:
            # The shared embedder is (re)starting; its supervisor says so. Embedded next cycle.
            logger.debug("the shared embedder does not answer; embedding on a later cycle")
            return
        self._embedded_upto = embedded.upto
        if embedded.complete and not self._pruned:
            # Every item has a vector under the configured model: other models' vectors can go.
            embeddings_prune()
            self._pruned = True

    def run(self) -> None:
        failures = 0
        try:
            while not self._stop.is_set():
                self._wake.clear()
                with self._cycle:
                    # Checked under the cycle lock: after wait_idle() returns, no cycle starts
                    # with settings older than the caller's.
                    if not self.enabled():
                        self._wake.wait(self.idle_wait)
                        continue
                    close_old_connections()
                    try:
                        self.run_once()
                        failures = 0
                    except Exception:
                        failures += 1
                        # A database restart, say: keep going, but quietly.
                        if failures <= 3 or failures % 60 == 0:
                            logger.exception("consolidation cycle failed (%d in a row)", failures)
                        connections.close_all()
                if self._wake.wait(self.idle_wait) and not self._stop.is_set():
                    time.sleep(GATHER)
        finally:
            connections.close_all()


_embedded: ConsolidatorLoop | None = None
_embedded_thread: threading.Thread | None = None
_lock = threading.Lock()


def embedded_enabled() -> bool:
    return not settings.CELERY_BROKER_URL and bool(settings.UNFORGETTER["EMBEDDED_WORKER"])


def embedded_start() -> bool:
    """Start the embedded consolidator thread of this process, unless a broker is configured.

    The thread idles (and is idle within a cycle) while EMBEDDED_WORKER is off, so the setting can
    be switched at run time, as tests do.
    """
    global _embedded, _embedded_thread
    if settings.CELERY_BROKER_URL:
        return False
    with _lock:
        if _embedded_thread is not None and _embedded_thread.is_alive():
            return True
        _embedded = ConsolidatorLoop(enabled=embedded_enabled)
        _embedded_thread = threading.Thread(
            target=_embedded.run, name="unforgetter-consolidator", daemon=True
        )
        _embedded_thread.start()
        dispatch.embedded_nudge_set(_embedded.wake)
    logger.info("embedded consolidator started (no CELERY_BROKER_URL)")
    return True


def embedded_stop(timeout: float = 10.0) -> None:
    global _embedded, _embedded_thread
    with _lock:
        loop, thread = _embedded, _embedded_thread
        _embedded = _embedded_thread = None
        dispatch.embedded_nudge_set(None)
    if loop is not None:
        loop.stop()
    if thread is not None:
        thread.join(timeout)


def embedded_wait_idle() -> None:
    """Wait for the embedded worker's current cycle, if any, to finish."""
    loop = _embedded
    if loop is not None:
        loop.wait_idle()
