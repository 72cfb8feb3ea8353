"""Every task the beat schedule names is registered with the Celery app."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from unforgetter.celery import app


def test_beat_schedule_names_only_registered_tasks() -> None:
    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled == {"memory.publish_heartbeat", "workspaces.prune_oauth_clients"}
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
