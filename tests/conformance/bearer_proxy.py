"""A loopback proxy that adds `Authorization: Bearer $UNFORGETTER_TOKEN` to every request.

The MCP conformance suite cannot send a bearer token; this stands between it and the server,
forwarding every request as it came (Host and Origin included, so DNS-rebinding checks still see
what the suite sent) and streaming every response back (SSE included).

    python -m tests.conformance.bearer_proxy --port 8132 --upstream http://127.0.0.1:8131
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import httpx
import uvicorn

# Hop-by-hop headers (RFC 9110 section 7.6.1) belong to one connection, never forwarded.
_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}


def proxy_app(upstream: str, token: str) -> Any:
    client = httpx.AsyncClient(base_url=upstream, timeout=httpx.Timeout(60.0, read=None))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        # Field values are parsed without surrounding whitespace (RFC 9110 section 5.5).
        headers = [
            (k.decode("latin-1"), v.decode("latin-1").strip(" \t"))
            for k, v in scope["headers"]
            if k.decode("latin-1").lower() not in _HOP | {"authorization", "content-length"}
        ]
        headers.append(("Authorization", f"Bearer {token}"))
        path = scope["raw_path"].decode() + (
            f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        )
        request = client.build_request(scope["method"], path, headers=headers, content=body)
        response = await client.send(request, stream=True)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (k.encode("latin-1"), v.encode("latin-1"))
                        for k, v in response.headers.multi_items()
                        if k.lower() not in _HOP | {"content-length", "content-encoding"}
                    ],
                }
            )
            async for chunk in response.aiter_bytes():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="The server's origin, e.g. http://127.0.0.1:8131")
    parser.add_argument("--token-env", default="UNFORGETTER_TOKEN")
    args = parser.parse_args()
    token = os.environ.get(args.token_env, "")
    if not token:
        parser.error(f"${args.token_env} is empty: the proxy has no token to add.")
    uvicorn.run(proxy_app(args.upstream, token), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
