"""`python -m unforgetter.serve` (`make run`): every worker takes connections, and keeps doing so.

uvicorn's `--workers` share one listening socket: clients connecting at once all landed on the
worker that woke first. Here each worker listens on a socket of its own (SO_REUSEPORT).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import _free_port
from tests.processes import wait_until
from unforgetter.serve import reuse_port_socket

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to see who holds what"),
]
WORKERS = 2
CONNECTIONS = 24


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found.update(int(child) for child in children)
    return found


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _sockets_of(port: int, state: str) -> list[tuple[int, int]]:
    """Each socket on local `port` in this TCP state (01 established, 0A listening): its remote
    port and its inode."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], int(fields[9])
        if fields[3] == state and int(local.split(":")[1], 16) == port:
            found.append((int(remote.split(":")[1], 16), inode))
    return found


def _listening(server: subprocess.Popen[bytes], port: int) -> dict[int, set[int]]:
    """The server's workers (its children listening on `port`) and their listening sockets."""
    listening = {inode for _, inode in _sockets_of(port, "0A")}
    held = {pid: _socket_inodes(pid) & listening for pid in _children(server.pid)}
    return {pid: inodes for pid, inodes in held.items() if inodes}


def _get(connection: socket.socket) -> bytes:
    connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return connection.recv(65536)


def _workers_serving(server: subprocess.Popen[bytes], port: int) -> dict[int, int]:
    """Open CONNECTIONS kept-alive connections at once, each asked once; connections per worker."""
    connections = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(CONNECTIONS)]
    try:
        assert all(_get(c).startswith(b"HTTP/1.1 200") for c in connections)
        served = dict(_sockets_of(port, "01"))
        held = {pid: _socket_inodes(pid) for pid in _listening(server, port)}
        per_worker = dict.fromkeys(held, 0)
        for c in connections:
            inode = served[c.getsockname()[1]]
            owners = [pid for pid, inodes in held.items() if inode in inodes]
            assert len(owners) == 1, "each connection is one worker's"
            per_worker[owners[0]] += 1
        return per_worker
    finally:
        for c in connections:
            c.close()


def _up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
            return _get(c).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


@contextmanager
def _serving(tmp_path: Path, *launcher: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`launcher` (the Python arguments that start the server) serving WORKERS workers on a new
    SQLite database, once both listen; stopped after."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PUBLIC_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", UNFORGETTER_TESTING="1")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    command = [sys.executable, *launcher, "--port", str(port), "--workers", str(WORKERS)]
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        # A deadline for processes to start on a loaded machine, not a timing test.
        wait_until(
            lambda: len(_listening(server, port)) == WORKERS, timeout=90, what="both workers to listen"
        )
        yield server, port
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_connections_made_at_once_are_spread_over_the_workers_and_survive_one_killed(tmp_path: Path) -> None:
    with _serving(tmp_path, "-m", "unforgetter.serve") as (server, port):
        own = list(_listening(server, port).values())
        assert not own[0] & own[1], "each worker listens on a socket of its own"
        per_worker = _workers_serving(server, port)
        # With one socket shared, one worker took all of them; with a socket each, the kernel's
        # hash leaves all 24 on one of two workers once in 8 million.
        assert len(per_worker) == WORKERS
        assert all(count > 0 for count in per_worker.values()), per_worker

        # A worker killed outright takes its socket along: new connections go to the others, and
        # the supervisor starts a worker in its place, which takes connections too.
        killed = min(per_worker)
        os.kill(killed, signal.SIGKILL)
        wait_until(lambda: killed not in _children(server.pid), timeout=30, what="the killed worker to go")
        for _ in range(10):
            assert _up(port)
        wait_until(
            lambda: len(_listening(server, port)) == WORKERS,
            timeout=90,
            what="a worker in the killed one's place",
        )
        wait_until(
            lambda: all(n for n in _workers_serving(server, port).values()), timeout=30, what="the new worker"
        )


def test_without_so_reuseport_the_workers_share_one_socket_as_uvicorns_do(tmp_path: Path) -> None:
    without = (
        "import socket, sys; del socket.SO_REUSEPORT; from unforgetter.serve import main; main(sys.argv[1:])"
    )
    with _serving(tmp_path, "-c", without) as (server, port):
        first, second = _listening(server, port).values()
        assert first == second, "one socket, shared"
        assert _up(port)


def test_a_taken_port_is_refused_once_by_the_parent(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "unforgetter.serve", "--port", str(port), "--workers", "2"],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    assert f"cannot serve on 127.0.0.1:{port}" in done.stderr


def test_sockets_of_one_address_share_it_only_with_each_other() -> None:
    first = reuse_port_socket("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        second = reuse_port_socket("127.0.0.1", port)  # a worker's, beside the parent's
        second.close()
        with socket.socket() as plain, pytest.raises(OSError, match="in use"):
            plain.bind(("127.0.0.1", port))  # anything else is refused the port
    finally:
        first.close()
