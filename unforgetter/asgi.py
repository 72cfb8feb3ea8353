"""The ASGI entry point: a router in front of the MCP app and Django.

Lifespan and POST /mcp go to the MCP app; GET and DELETE on /mcp are 405 (the server is
stateless: no SSE stream, no session to delete); everything else goes to Django. With no
CELERY_BROKER_URL the lifespan also starts and stops the embedded consolidator (memory.worker), so
one serving process consolidates proposals and keeps freshness current by itself, and the heap
trimmer (memory.heap) returns freed memory every few seconds. The lifespan also has the process
leave the local model to the machine's shared embedder (memory.embeddings.share). An MCP
request's database work runs in the process's request threads (mcpbridge.threads), which return
or keep its connection at the end of each unit: no thread, connection or signal hop per request.
"""

from __future__ import annotations

import os
from typing import Any, cast

import django
from asgiref.sync import sync_to_async
from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, Scope

from memory.heap import limit_malloc_arenas, trim_periodically, trim_periodically_stop
from unforgetter.collector import settle_after_startup

# Before anything starts a thread (request threads, the embedder's, the consolidator).
limit_malloc_arenas()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

from mcpbridge.asgi import build_mcp_app  # noqa: E402
from memory import embeddings  # noqa: E402
from memory.worker import embedded_start, embedded_stop  # noqa: E402
from workspaces import write_behind  # noqa: E402
from workspaces.logs import request_id, request_id_for  # noqa: E402
from workspaces.net import client_address  # noqa: E402

MCP_PATH = "/mcp"


def behind_proxies(scope: Scope) -> Scope:
    """The scope with the real client address and scheme when the peer is a trusted proxy.

    Only TRUSTED_PROXIES (none by default) are believed about X-Forwarded-For and
    X-Forwarded-Proto; uvicorn runs with --no-proxy-headers so this is the one place that decides
    (its default believes any loopback peer). Throttles, audit and the request log all read the
    address from here.
    """
    if scope["type"] != "http" or scope.get("client") is None or not settings.TRUSTED_PROXIES:
        return scope
    peer, port = scope["client"] or ("", 0)
    headers: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in (b"x-forwarded-for", b"x-forwarded-proto"):
            joined = headers.get(name, "")
            headers[name] = f"{joined},{value.decode('latin-1')}" if joined else value.decode("latin-1")
    address = client_address(peer, headers.get(b"x-forwarded-for"), settings.TRUSTED_PROXIES)
    if address == peer:
        return scope
    changed: dict[str, Any] = {"client": (address, port)}
    proto = headers.get(b"x-forwarded-proto", "").split(",")[-1].strip().lower()
    if proto in ("http", "https"):
        changed["scheme"] = proto
    return cast(Scope, {**scope, **changed})


async def _method_not_allowed(send: ASGISendCallable) -> None:
    body = b'{"error":"method_not_allowed","error_description":"POST JSON-RPC messages to /mcp."}'
    await send(
        {
            "type": "http.response.start",
            "status": 405,
            "headers": [
                (b"allow", b"POST"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            "trailers": False,
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


class Router:
    def __init__(self) -> None:
        self.django_app = get_asgi_application()
        self.mcp_app = build_mcp_app()

    async def __call__(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        scope = behind_proxies(scope)
        if scope["type"] == "http":
            await self._with_request_id(scope, receive, send)
            return
        await self._route(scope, receive, send)

    async def _with_request_id(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        presented = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-request-id"), None)  # type: ignore[typeddict-item]
        rid = request_id_for(presented)
        token = request_id.set(rid)

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (b"x-request-id", rid.encode())],
                }
            await send(message)

        try:
            await self._route(scope, receive, send_with_id)
        finally:
            request_id.reset(token)

    async def _route(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] == "http" and scope["path"] in (MCP_PATH, MCP_PATH + "/"):
            if scope["method"] != "POST":
                await _method_not_allowed(send)
                return
            await self.mcp_app({**scope, "path": MCP_PATH}, receive, send)  # type: ignore[arg-type]
            return
        await self.django_app(scope, receive, send)  # type: ignore[arg-type]

    async def _lifespan(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        async def observed_receive() -> Any:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # Before the consolidator starts: it embeds what it publishes.
                await sync_to_async(embeddings.share, thread_sensitive=False)()
                await sync_to_async(embedded_start, thread_sensitive=False)()
                settle_after_startup()
                trim_periodically()
            elif message["type"] == "lifespan.shutdown":
                trim_periodically_stop()
                # The audit records still queued (workspaces.write_behind) go before the process.
                await sync_to_async(write_behind.flush_all, thread_sensitive=False)()
                await sync_to_async(embedded_stop, thread_sensitive=False)()
                await sync_to_async(embeddings.unshare, thread_sensitive=False)()
            return message

        await self.mcp_app(scope, observed_receive, send)  # type: ignore[arg-type]


application = Router()
