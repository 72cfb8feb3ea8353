"""Shared fixtures: a live ASGI server on a real socket, MCP clients and domain set-ups."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import pytest
import uvicorn
from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import override_settings

from memory.context import standing_parts_clear
from memory.embeddings import pgvector
from memory.embeddings.index import indexes
from memory.lexical_index import lexical_indexes
from memory.retrieval import embedding_projects_clear
from memory.services import workspace_open
from tests.factories import UserFactory
from tests.mcp_client import MCPClient

# Tests turn CELERY_BROKER_URL on at run time (override_settings); a process started with a broker
# has created the configured Celery app with its settings (unforgetter.settings), so this one does too.
from unforgetter import celery as _celery_app  # noqa: F401
from workspaces import write_behind
from workspaces.caches import cache as fallback_cache
from workspaces.limits import over_rate_clear, server_time
from workspaces.models import Connection, DataClass, Project, Workspace
from workspaces.services import project_create, token_issue


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    server: uvicorn.Server

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"


@pytest.fixture(scope="session")
def live_server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[LiveServer]:
    """The real ASGI application (router, MCP app, Django) served by uvicorn on a free port.

    PUBLIC_URL is pointed at it, so the MCP resource identifier is the URL clients use.
    """
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    overrides = override_settings(PUBLIC_URL=url, MCP_RESOURCE_URL=f"{url}/mcp", CSRF_TRUSTED_ORIGINS=[url])
    overrides.enable()
    from unforgetter.asgi import Router

    # As documented: the router, not uvicorn, decides whose X-Forwarded-For is believed.
    config = uvicorn.Config(
        Router(), host="127.0.0.1", port=port, lifespan="on", log_level="warning", proxy_headers=False
    )
    server = uvicorn.Server(config)
    with django_db_blocker.unblock():
        thread = threading.Thread(target=server.run, name="live-asgi", daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("The live ASGI server did not start.")
            time.sleep(0.02)
        yield LiveServer(url=url, server=server)
        server.should_exit = True
        thread.join(timeout=10)
    overrides.disable()


@pytest.fixture
def live(live_server_url: LiveServer, transactional_db: None) -> Iterator[LiveServer]:
    """The live server, with a test database its threads can see (committed, flushed after)."""
    yield live_server_url
    # Rows the server still holds (the audit records of the last bundles) land before the
    # database is flushed, not in the next test's tables.
    write_behind.flush_all()


@dataclass
class Tenant:
    """A workspace with an owner and projects of every data class."""

    workspace: Workspace
    owner: Any
    projects: dict[str, Project]

    def issue(self, **kwargs: Any) -> tuple[str, Connection]:
        options: dict[str, Any] = {
            "actor": "agent@tests",
            "zone": "claude",
            "role": Connection.Role.CONTRIBUTOR,
            "data_classes": [DataClass.PUBLIC, DataClass.INTERNAL],
        }
        options.update(kwargs)
        issued = token_issue(workspace=self.workspace, **options)
        return issued.token, issued.connection


def make_tenant(slug: str) -> Tenant:
    owner = cast(User, UserFactory(username=f"{slug}-owner"))
    workspace = workspace_open(slug=slug, name=slug.title(), owner=owner)
    projects = {
        name: project_create(workspace=workspace, slug=name, name=name.title(), data_class=data_class)
        for name, data_class in [
            ("handbook", DataClass.PUBLIC),
            ("platform", DataClass.INTERNAL),
            ("incidents", DataClass.CONFIDENTIAL),
            ("payroll", DataClass.RESTRICTED),
        ]
    }
    return Tenant(workspace=workspace, owner=owner, projects=projects)


@pytest.fixture
def tenant(db: None) -> Tenant:
    return make_tenant("acme")


@pytest.fixture
def other_tenant(db: None) -> Tenant:
    return make_tenant("globex")


@pytest.fixture
def mcp_client(live: LiveServer) -> Callable[..., MCPClient]:
    """Build an SDK client for the live server: mcp_client(token, mode="legacy")."""

    def build(token: str | None, mode: str = "legacy") -> MCPClient:
        return MCPClient(live.mcp_url, token, mode)

    return build


@pytest.fixture(params=["legacy", "2026-07-28"], ids=["era-2025-11-25", "era-2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    """Run a test once per protocol era."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _fresh_limits() -> None:
    """Each test starts with no throttle counts or budgets: database flushes reuse credential ids."""
    cache.clear()
    fallback_cache.reset()
    fallback_cache.local.clear()
    server_time.clear()
    over_rate_clear()


@pytest.fixture(scope="session", autouse=True)
def _pgvector_detected(django_db_setup: None, django_db_blocker: Any) -> None:
    """Whether the test database has pgvector, looked up before any test counts its queries (a
    server process does so on its first search)."""
    if connection.vendor == "postgresql":
        with django_db_blocker.unblock():
            pgvector.forget()
            pgvector.state()


@pytest.fixture(autouse=True)
def _fresh_read_indexes() -> None:
    """Each test starts with no in-process word or vector index, standing part, kept row or
    project known to embed its tasks: flushed databases reuse ids and publication versions."""
    lexical_indexes.clear()
    indexes.clear()
    standing_parts_clear()
    embedding_projects_clear()


@pytest.fixture(params=["pgvector", "in-process"])
def vector_store(request: pytest.FixtureRequest, db: None) -> Iterator[str]:
    """Run a test once per vector store: PostgreSQL's pgvector (PGVECTOR on; skipped where it is not
    installed) and the in-process index (PGVECTOR off, the default: what SQLite uses too)."""
    if connection.vendor == "postgresql":
        pgvector.forget()  # an earlier test may have patched or emptied what was detected
        pgvector.state()
    if request.param == "pgvector" and not pgvector.ready():
        pytest.skip("needs PostgreSQL with the pgvector extension (0.8 or later) installed")
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "PGVECTOR": request.param == "pgvector"}):
        yield str(request.param)


def pytest_configure() -> None:
    # Fast hashing in tests only: users are created in most tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
