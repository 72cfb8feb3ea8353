from django.apps import AppConfig


class McpbridgeConfig(AppConfig):
    name = "mcpbridge"
    default_auto_field = "django.db.models.BigAutoField"
