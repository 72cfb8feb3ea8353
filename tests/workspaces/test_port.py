"""`make run PORT=...`: the served port is the printed one, challenges and snippets included."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.processes import wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PUBLIC_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(PORT=str(port), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", UNFORGETTER_TESTING="1")
    env.update(extra)
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_port_alone_moves_every_printed_url(tmp_path: Path) -> None:
    port = _free_port()
    env = _env(tmp_path, port)
    _manage(env, "migrate", "--noinput", "-v", "0")
    info = json.loads(_manage(env, "bootstrap_demo", "--json", "--state-file", str(tmp_path / "demo.json")))
    assert info["mcp_url"] == f"http://127.0.0.1:{port}/mcp"
    assert info["console_url"] == f"http://127.0.0.1:{port}/console/"
    assert all(f"127.0.0.1:{port}/mcp" in text for text in info["snippets"].values())
    assert "8000" not in json.dumps(info["snippets"])

    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "unforgetter.asgi:application",
            "--port",
            str(port),
            "--lifespan",
            "on",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        challenge = ""

        def challenged() -> bool:
            nonlocal challenge
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/mcp", data=b"{}", headers={"Content-Type": "application/json"}
                )
                urllib.request.urlopen(request, timeout=2)
            except urllib.error.HTTPError as refused:
                challenge = refused.headers.get("WWW-Authenticate", "")
                return True
            except OSError:
                return False
            return True

        # A deadline for the server to start (a loaded machine can take a while), not a timing test.
        wait_until(challenged, timeout=90, what="the server to answer on its port", interval=0.2)
        assert (
            f'resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"'
            in challenge
        )
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_public_url_wins_over_port(tmp_path: Path) -> None:
    env = _env(tmp_path, 8137, PUBLIC_URL="https://memory.example.com")
    _manage(env, "migrate", "--noinput", "-v", "0")
    info = json.loads(_manage(env, "bootstrap_demo", "--json", "--state-file", str(tmp_path / "demo.json")))
    assert info["mcp_url"] == "https://memory.example.com/mcp"
