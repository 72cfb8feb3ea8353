from django.contrib import admin
from django.urls import include, path

from workspaces import views as workspace_views

urlpatterns = [
    path("healthz", workspace_views.healthz, name="healthz"),
    path(".well-known/oauth-protected-resource", workspace_views.protected_resource_metadata),
    path(".well-known/oauth-protected-resource/mcp", workspace_views.protected_resource_metadata),
    path("admin/", admin.site.urls),
    path("api/v1/", include("memory.api_urls", namespace="api")),
    path("oauth/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
