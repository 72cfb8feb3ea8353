from django.contrib import admin
from django.urls import include, path, re_path

from review.assets import static_asset
from workspaces import views as workspace_views

urlpatterns = [
    path("healthz", workspace_views.healthz, name="healthz"),
    path(".well-known/oauth-protected-resource", workspace_views.protected_resource_metadata),
    path(".well-known/oauth-protected-resource/mcp", workspace_views.protected_resource_metadata),
    path("admin/", admin.site.urls),
    path("console/", include("review.urls", namespace="review")),
    re_path(r"^static/(?P<path>.*)$", static_asset, name="static"),
    path("oauth/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
