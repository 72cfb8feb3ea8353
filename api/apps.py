from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API for scripts and snapshot prefetch: the same authority and payloads as /mcp."""

    name = "api"
    default_auto_field = "django.db.models.BigAutoField"
