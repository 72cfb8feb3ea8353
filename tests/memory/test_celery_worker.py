"""With a broker: a real Celery worker on Redis consolidates what propose enqueues on commit."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.test import override_settings
from django.utils import timezone

from memory.models import Fact, Proposal, Publication
from memory.tasks import publish_heartbeat
from tests.conftest import Tenant
from tests.processes import database_url_for_tests, process_env, start, stop, wait_until
from unforgetter.celery import app as celery_app
from workspaces.selectors import agent_scope

# A Celery worker and a beat process of their own: multi-process, seconds each.
pytestmark = pytest.mark.slow

BROKER = "redis://127.0.0.1:6379/3"


def _redis_or_skip() -> None:
    try:
        redis.Redis.from_url(BROKER, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError:
        pytest.skip("Redis is not reachable at 127.0.0.1:6379 (start redis-server to run this test)")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[str]:
    """A Celery worker process on the test database, and this process sending through Redis."""
    _redis_or_skip()
    previous = celery_app.conf.broker_url, celery_app.conf.task_default_queue
    # A queue of this test's own: another process on the same Redis database takes nothing of it.
    queue = f"unforgetter-test-{uuid.uuid4().hex[:8]}"
    celery_app.conf.update(broker_url=BROKER, task_default_queue=queue)
    worker = start(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "unforgetter",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--queues",
            queue,
        ],
        env=process_env(DATABASE_URL=database_url_for_tests(), CELERY_BROKER_URL=BROKER, CELERY_QUEUE=queue),
        log=tmp_path / "worker.log",
    )
    try:
        # The serving process must not consolidate itself once a broker is configured.
        with override_settings(CELERY_BROKER_URL=BROKER):
            yield queue
    finally:
        stop(worker)
        redis.Redis.from_url(BROKER).delete(queue)  # nothing of this test's left behind
        celery_app.close()  # drop the pooled Redis connections before the broker URL goes back
        celery_app.conf.update(broker_url=previous[0], task_default_queue=previous[1])
        log = (tmp_path / "worker.log").read_text()
        print(log[-4000:])  # shown with a failure: what the worker received and did
        assert "Traceback" not in log, log[-3000:]


def test_celery_worker_publishes_proposals_and_the_heartbeat(
    tenant: Tenant, transactional_db: None, broker: str
) -> None:
    from memory.services import proposal_submit

    _, connection = tenant.issue()
    refs = [
        proposal_submit(
            scope=agent_scope(connection),
            project_id="platform",
            request_id=f"celery-{uuid.uuid4()}",
            op="add_fact",
            text=f"Worker pool {i} autoscales between 2 and 8 replicas.",
            evidence=[{"ref": "deploy/values.yaml", "trust": "trusted"}],
        ).proposal.ref
        for i in range(10)
    ]
    wait_until(
        lambda: Proposal.objects.filter(ref__in=refs, status=Proposal.Status.PUBLISHED).count() == 10,
        timeout=60,
        what="the Celery worker to publish the proposals",
    )
    assert Fact.objects.filter(proposal__ref__in=refs).count() == 10

    Publication.objects.filter(workspace=tenant.workspace).update(
        compiled_at=timezone.now() - timedelta(hours=1)
    )
    before = Publication.objects.filter(workspace=tenant.workspace).count()
    publish_heartbeat.delay()
    wait_until(
        lambda: Publication.objects.filter(workspace=tenant.workspace).count() > before,
        timeout=60,
        what="the heartbeat task to publish",
    )


def test_celery_beat_schedules_the_heartbeat(
    tenant: Tenant, transactional_db: None, broker: str, tmp_path: Path
) -> None:
    stale = timezone.now() - timedelta(hours=1)
    Publication.objects.filter(workspace=tenant.workspace).update(compiled_at=stale)
    beat = start(
        [
            *(sys.executable, "-m", "celery", "-A", "unforgetter", "beat", "--loglevel=WARNING"),
            *("--schedule", str(tmp_path / "beat-schedule")),
        ],
        env=process_env(
            DATABASE_URL=database_url_for_tests(),
            CELERY_BROKER_URL=BROKER,
            CELERY_QUEUE=broker,
            HEARTBEAT_TICK_SECONDS="0.5",
        ),
        log=tmp_path / "beat.log",
    )
    try:
        wait_until(
            lambda: Publication.objects.filter(workspace=tenant.workspace, compiled_at__gt=stale).exists(),
            timeout=60,
            what="beat's heartbeat to reach the worker and publish",
        )
    finally:
        stop(beat)
    assert "Traceback" not in (tmp_path / "beat.log").read_text()
