"""Every task the beat schedule names is registered with the Celery app."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from unforgetter.celery import app


def test_beat_schedule_names_only_registered_tasks() -> None:
    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled == {
        "memory.publish_heartbeat",
        "memory.embed_pending",
        "workspaces.prune_oauth_clients",
        "workspaces.purge_deleted_workspaces",
    }
    assert scheduled <= set(app.tasks)


def test_prune_task_deletes_a_stale_self_registered_client(db: None) -> None:
    from oauth2_provider.models import Application

    from workspaces.tasks import prune_oauth_clients

    Application.objects.create(
        name="never approved",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="https://example.com/cb",
        registration_source=Application.RegistrationSource.DCR,
    )
    Application.objects.update(created=timezone.now() - timedelta(days=30))
    assert prune_oauth_clients.apply().get() == 1
    assert not Application.objects.exists()


def test_purge_task_completes_receipts_past_their_retention(db: None, tmp_path: object) -> None:
    from workspaces.models import WorkspaceDeletion
    from workspaces.tasks import purge_deleted_workspaces

    due = WorkspaceDeletion.objects.create(
        slug="gone", name="Gone", purge_after=timezone.now() - timedelta(seconds=1)
    )
    later = WorkspaceDeletion.objects.create(
        slug="soon", name="Soon", purge_after=timezone.now() + timedelta(days=1)
    )
    assert purge_deleted_workspaces.apply().get() == 1
    due.refresh_from_db()
    later.refresh_from_db()
    assert due.purged_at is not None
    assert later.purged_at is None


def test_embed_task_embeds_items_without_a_vector(db: None) -> None:
    from memory.embeddings import embedder
    from memory.models import Embedding
    from memory.tasks import embed_pending
    from tests.conftest import make_tenant
    from tests.readpath import add_item

    if embedder() is None:
        pytest.skip("the local model's package is not installed")
    item = add_item(make_tenant("tasks").projects["platform"], "Deploys go out on Tuesdays.")
    assert embed_pending.apply().get() == 1
    assert Embedding.objects.filter(fact=item).count() == 1
