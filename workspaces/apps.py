from django.apps import AppConfig
from django.db import connections
from django.db.backends.signals import connection_created


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from workspaces import checks  # noqa: F401, PLC0415 - registering the checks is ready()'s job

        if any(connections[alias].vendor == "postgresql" for alias in connections):
            from workspaces.timestamps import utc_timestamps  # noqa: PLC0415 - psycopg only where used

            connection_created.connect(utc_timestamps, dispatch_uid="workspaces.utc_timestamps")
