"""The Celery app: the consolidator and the publish heartbeat when CELERY_BROKER_URL is set.

    celery -A unforgetter worker --loglevel=INFO     # consolidates (any number of them)
    celery -A unforgetter beat --loglevel=INFO       # one beat: the heartbeat schedule

Settings are read from Django's (CELERY_* names); tasks are found in each app's tasks.py.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")

app = Celery("unforgetter")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
