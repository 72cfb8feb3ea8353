# The Celery app is loaded with Django so that @shared_task binds to it and
# `transaction.on_commit(... .apply_async)` sends through its configured broker.
from unforgetter.celery import app as celery_app

__all__ = ("celery_app",)
