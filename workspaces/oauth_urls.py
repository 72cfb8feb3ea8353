"""The authorization server's endpoints under /oauth/, in DOT's `oauth2_provider` namespace.

Only what an OAuth 2.1 authorization server for MCP clients needs: authorize (our consent view),
token, revocation (RFC 7009), introspection, and registration (RFC 7591/7592). DOT's device flow,
OIDC and application-management pages are not mounted.
"""

from django.urls import path
from oauth2_provider import views as dot_views

from workspaces import oauth_views

app_name = "oauth2_provider"

urlpatterns = [
    path("authorize/", oauth_views.ConsentView.as_view(), name="authorize"),
    path("token/", dot_views.TokenView.as_view(), name="token"),
    path("revoke_token/", dot_views.RevokeTokenView.as_view(), name="revoke-token"),
    path("introspect/", dot_views.IntrospectTokenView.as_view(), name="introspect"),
    path("register/", oauth_views.RegistrationView.as_view(), name="dcr-register"),
    path(
        "register/<str:client_id>/",
        oauth_views.RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]
