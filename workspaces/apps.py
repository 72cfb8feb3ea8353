from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from workspaces import checks  # noqa: F401, PLC0415 - registering the checks is ready()'s job
