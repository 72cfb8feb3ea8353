"""With a broker: a real Celery worker on Redis consolidates what propose enqueues on commit."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone

from memory.models import Fact, Proposal, Publication
from memory.tasks import publish_heartbeat
from tests.conftest import Tenant
from tests.processes import database_url_for_tests, process_env, start, stop, wait_until
from unforgetter.celery import app as celery_app

BROKER = os.environ.get("TEST_CELERY_BROKER_URL", "redis://127.0.0.1:6379/3")


def _redis_or_skip() -> None:
    import redis

    try:
        redis.Redis.from_url(BROKER, socket_connect_timeout=2).flushdb()
    except redis.exceptions.ConnectionError:
        pytest.skip("Redis is not reachable at 127.0.0.1:6379 (start redis-server to run this test)")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A Celery worker process on the test database, and this process sending through Redis."""
    _redis_or_skip()
    previous = celery_app.conf.broker_url
    celery_app.conf.update(broker_url=BROKER)
    worker = start(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "unforgetter",
            "worker",
            "--pool=solo",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        env=process_env(DATABASE_URL=database_url_for_tests(), CELERY_BROKER_URL=BROKER),
        log=tmp_path / "worker.log",
    )
    try:
        # The serving process must not consolidate itself once a broker is configured.
        with override_settings(CELERY_BROKER_URL=BROKER):
            yield worker
    finally:
        stop(worker)
        celery_app.close()  # drop the pooled Redis connections before the broker URL goes back
        celery_app.conf.update(broker_url=previous)
        log = (tmp_path / "worker.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def test_celery_worker_publishes_proposals_and_the_heartbeat(
    tenant: Tenant, transactional_db: None, broker: subprocess.Popen[bytes]
) -> None:
    from memory.services import proposal_submit

    _, connection = tenant.issue()
    refs = [
        proposal_submit(
            connection=connection,
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
    assert broker.poll() is None
