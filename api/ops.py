"""Operator endpoints: liveness, readiness and Prometheus metrics.

`/healthz` answers 200 while the process serves (liveness: restart it when it does not).
`/readyz` answers 200 when the database and the broker answer and the consolidator keeps up,
503 with the failing check otherwise (take the worker out of rotation). `/metrics` is for an
operator: a bearer METRICS_TOKEN, or a request from this machine (loopback) when none is set;
anyone else gets 404, as if it did not exist.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memory.health import readiness
from memory.metrics import metrics_text
from workspaces.net import is_loopback_host
from workspaces.outages import RETRY_AFTER_SECONDS


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks = readiness()
    ready = all(check.ok for check in checks)
    body = {"status": "ready" if ready else "unavailable", **{c.name: c.detail for c in checks}}
    response = JsonResponse(body, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _operator(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if token:
        return scheme.lower() == "bearer" and constant_time_compare(presented.strip(), token)
    return is_loopback_host(str(request.META.get("REMOTE_ADDR") or ""))


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _operator(request):
        raise Http404
    return HttpResponse(metrics_text(), content_type="text/plain; version=0.0.4; charset=utf-8")
