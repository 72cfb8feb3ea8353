from django.contrib import admin
from django.contrib.staticfiles.views import serve as serve_static
from django.urls import include, path, re_path

from workspaces import views as workspace_views

urlpatterns = [
    path("healthz", workspace_views.healthz, name="healthz"),
    path(".well-known/oauth-protected-resource", workspace_views.protected_resource_metadata),
    path(".well-known/oauth-protected-resource/mcp", workspace_views.protected_resource_metadata),
    path("admin/", admin.site.urls),
    path("console/", include("review.urls", namespace="review")),
    # The console's and the admin's few assets, served by Django itself (no collectstatic step and
    # no web server in front in the embedded default); they are small and sent with Last-Modified.
    re_path(r"^static/(?P<path>.*)$", serve_static, {"insecure": True}),
    path("oauth/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
