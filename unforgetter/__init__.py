# The Celery app is created by the settings when CELERY_BROKER_URL is set (unforgetter.settings),
# and found by `celery -A unforgetter` as unforgetter.celery; without a broker no process loads it.
