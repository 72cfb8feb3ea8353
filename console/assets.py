"""Serve the console's and the admin's static assets from Django itself.

The embedded default has no web server in front and no collectstatic step, so assets are found
through the staticfiles finders. They are small: each is read whole and sent as a plain response
(a streamed file response would be iterated synchronously under ASGI), with Last-Modified so
browsers revalidate cheaply.
"""

from __future__ import annotations

from django.contrib.staticfiles.views import serve
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_safe

_KEPT_HEADERS = ("Content-Type", "Last-Modified", "Content-Encoding")


@require_safe
def static_asset(request: HttpRequest, path: str) -> HttpResponse:
    served = serve(request, path, insecure=True)
    if not isinstance(served, StreamingHttpResponse):
        return served  # 304 Not Modified, or an error page
    try:
        body = b"".join(served.streaming_content)  # type: ignore[arg-type]
    finally:
        served.close()
    response = HttpResponse(body, status=served.status_code)
    for header in _KEPT_HEADERS:
        if header in served:
            response[header] = served[header]
    response["Cache-Control"] = "no-cache"
    response["X-Content-Type-Options"] = "nosniff"
    return response
