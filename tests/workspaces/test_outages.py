"""A database outage is a retryable 503 (MCP: `unavailable` with retry_after) on every surface.

The server under test is a real uvicorn process whose database is unreachable: a closed port on
PostgreSQL, a file in a directory that does not exist on SQLite. The shared test database is
never touched.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import OperationalError, connection

import mcpbridge.server
from tests.conftest import Tenant
from tests.mcp_client import MCPClient
from tests.processes import process_env, start, stop, wait_until

pytestmark = pytest.mark.slow


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens on it once the socket is closed


def _unreachable_database_url(tmp_path: Path) -> str:
    if connection.vendor == "postgresql":
        return f"postgres://root@127.0.0.1:{_closed_port()}/unreachable"
    return f"sqlite:///{tmp_path / 'no-such-directory' / 'db.sqlite3'}"


@pytest.fixture(scope="module")
def outage_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp_path = tmp_path_factory.mktemp("outage")
    port = _closed_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    env = process_env(
        DATABASE_URL=_unreachable_database_url(tmp_path),
        DB_POOL_TIMEOUT_SECONDS="1",
        PUBLIC_URL=url,
        LOG_LEVEL="WARNING",
    )
    uvicorn = str(Path(sys.executable).parent / "uvicorn")
    args = [uvicorn, "unforgetter.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    process = start([*args, "--no-proxy-headers", "--lifespan", "on"], env=env, log=log)
    try:

        def serving() -> bool:
            try:
                return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(serving, timeout=60, what="the server with an unreachable database")
        yield url, log
    finally:
        stop(process)


def _assert_retryable(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "5"
    assert "Traceback" not in response.text
    assert "OperationalError" not in response.text
    body: dict[str, Any] = response.json()
    return body


def test_mcp_answers_503_unavailable_with_retry_after(outage_server: tuple[str, Path]) -> None:
    url, _ = outage_server
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_projects"}}
    response = httpx.post(
        f"{url}/mcp",
        json=call,
        headers={"Authorization": "Bearer unf_whatever", "Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    error = _assert_retryable(response)["error"]
    assert error["code"] == "unavailable"
    assert error["retry_after"] == 5
    assert "database" in error["message"]


def test_the_rest_api_answers_problem_json_503(outage_server: tuple[str, Path]) -> None:
    url, _ = outage_server
    response = httpx.get(
        f"{url}/api/v1/projects/", headers={"Authorization": "Bearer unf_whatever"}, timeout=30
    )
    body = _assert_retryable(response)
    assert response.headers["Content-Type"] == "application/problem+json"
    assert (body["code"], body["status"], body["retry_after"]) == ("unavailable", 503, 5)


def test_the_console_answers_a_503_page(outage_server: tuple[str, Path]) -> None:
    url, _ = outage_server
    response = httpx.get(
        f"{url}/console/", headers={"Accept": "text/html"}, cookies={"sessionid": "s" * 32}, timeout=30
    )
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert "Temporarily unavailable" in response.text
    assert "Traceback" not in response.text
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]


def test_oauth_endpoints_answer_503(outage_server: tuple[str, Path]) -> None:
    url, _ = outage_server
    token = httpx.post(
        f"{url}/oauth/token/",
        data={"grant_type": "authorization_code", "code": "x", "client_id": "y", "code_verifier": "z" * 43},
        timeout=30,
    )
    assert _assert_retryable(token)["code"] == "unavailable"
    registration = httpx.post(
        f"{url}/oauth/register/",
        json={"redirect_uris": ["http://127.0.0.1:9/cb"], "client_name": "outage"},
        timeout=30,
    )
    assert _assert_retryable(registration)["code"] == "unavailable"


def test_readyz_names_the_database_and_says_when_to_retry(outage_server: tuple[str, Path]) -> None:
    url, log = outage_server
    body = _assert_retryable(httpx.get(f"{url}/readyz", timeout=30))
    assert (body["status"], body["database"]) == ("unavailable", "unreachable")
    logged = log.read_text(encoding="utf-8")
    assert "database unavailable" in logged
    assert "Traceback" not in logged  # an outage is logged as a warning line, not a stack


@pytest.mark.django_db(transaction=True)
def test_an_outage_inside_a_tool_is_an_unavailable_tool_error(
    tenant: Tenant, mcp_client: Callable[..., MCPClient], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    token, _ = tenant.issue()

    def database_gone(scope: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    # Authentication reads the real database; the tool's own work (its selector) meets the outage,
    # on the SDK's path and on the direct one (mcpbridge.direct) alike.
    monkeypatch.setattr(mcpbridge.server, "projects_for_agent", database_gone)
    result = mcp_client(token, mode).call("list_projects", {})
    assert result.is_error
    error = result.structured_content["error"]
    assert (error["code"], error["retry_after"]) == ("unavailable", 5)
    assert "closed the connection" not in error["message"]
