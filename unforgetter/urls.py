from django.contrib import admin
from django.urls import include, path, re_path
from oauth2_provider.views import OAuthServerMetadataView

from api import ops
from console.assets import static_asset
from console.views.docs import root
from workspaces.oauth_views import ProtectedResourceMetadataView

# A database outage met outside a view is a 503 too; anything else is Django's 500 page.
handler500 = "workspaces.outages.server_error"

urlpatterns = [
    path("", root, name="root"),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics, name="metrics"),
    # RFC 9728, root and path forms (Codex reads the path form after a 405 on GET /mcp).
    path(".well-known/oauth-protected-resource", ProtectedResourceMetadataView.as_view()),
    path(".well-known/oauth-protected-resource/mcp", ProtectedResourceMetadataView.as_view()),
    path(
        ".well-known/oauth-authorization-server",
        OAuthServerMetadataView.as_view(),
        name="oauth-authorization-server",
    ),
    path("admin/", admin.site.urls),
    # Not `include`, which imports api.urls at once: imported on the first request under api/v1/
    # (or the first reverse()), since its OpenAPI annotations load drf-spectacular and with it
    # django.test, 17 MB in every web worker, most of which only ever serve /mcp.
    path("api/v1/", ("api.urls", "api", "api")),
    path("console/", include("console.urls", namespace="console")),
    re_path(r"^static/(?P<path>.*)$", static_asset, name="static"),
    path("oauth/", include("workspaces.oauth_urls", namespace="oauth2_provider")),
]
