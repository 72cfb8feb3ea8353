"""Running real worker processes against the test database (consolidators, Celery workers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR)


def database_url_for_tests(*, application_name: str = "") -> str:
    """A DATABASE_URL for the database this test session uses (the test database)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    user = quote(db.get("USER") or "")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    url = f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"
    return f"{url}?application_name={application_name}" if application_name else url


def process_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "unforgetter.settings",
            "UNFORGETTER_TESTING": "1",
            "SECRET_KEY": settings.SECRET_KEY,
            "LEDGER_KEY": settings.UNFORGETTER["LEDGER_KEY"],
            "CELERY_BROKER_URL": "",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def start(args: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("ab")
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT)


def manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


def stop(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)


def wait_until(condition: Callable[[], bool], *, timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll a condition (a deadline for liveness, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(interval)


def children(pid: int) -> list[int]:
    """The processes `pid` started, from any of its threads (a supervisor thread's included)."""
    return [
        int(c)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for c in (task / "children").read_text().split()
    ]


def shared_embedders(pid: int) -> list[int]:
    """The shared embedder processes (memory.embeddings.service) that `pid` runs."""
    return [
        c for c in children(pid) if b"memory.embeddings.service" in Path(f"/proc/{c}/cmdline").read_bytes()
    ]
