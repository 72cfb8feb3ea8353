"""Infrastructure endpoints: health and the RFC 9728 protected-resource metadata."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """For load balancers: 200 when the database answers, 503 otherwise."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


@require_GET
def protected_resource_metadata(request: HttpRequest) -> JsonResponse:
    """RFC 9728: the /mcp resource and the authorization server that issues tokens for it."""
    scopes = list(settings.OAUTH2_PROVIDER.get("SCOPES", {}))
    response = JsonResponse(
        {
            "resource": settings.MCP_RESOURCE_URL,
            "authorization_servers": [settings.PUBLIC_URL],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "Unforgetter memory",
            "resource_documentation": f"{settings.PUBLIC_URL}/console/docs/mcp/",
        }
    )
    response["Access-Control-Allow-Origin"] = "*"
    response["Cache-Control"] = "public, max-age=300"
    return response
