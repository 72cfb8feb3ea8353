"""Security headers on every response Django renders: a Content-Security-Policy on every HTML page.

The console, the sign-in page, the OAuth consent page, the admin and the error pages (404, 403,
CSRF failure, 500) load only their own scripts and stylesheets, so one policy fits them all: no
inline script, no remote beacon, no framing, no form posting elsewhere. The admin alone also
allows inline style attributes (Django's widgets use a few), never inline script. A view that
sets its own policy keeps it. HSTS and the other headers are Django's SecurityMiddleware's.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
ADMIN_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace(
    "style-src 'self'", "style-src 'self' 'unsafe-inline'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            policy = (
                ADMIN_CONTENT_SECURITY_POLICY
                if request.path.startswith("/admin/")
                else CONTENT_SECURITY_POLICY
            )
            response.headers.setdefault("Content-Security-Policy", policy)
        return response
