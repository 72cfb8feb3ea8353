"""`python -m unforgetter.serve`: the ASGI app served by uvicorn, one worker process per core,
each worker listening on a socket of its own.

uvicorn's `--workers` share one listening socket, and the worker that wakes first accepts every
connection waiting. Clients that connect at once (eight agents' MCP clients after a restart, or
a benchmark's) all landed on one worker and stayed there, kept alive, while the other workers
sat idle: on two cores, propose_memory took 244-282 accepted/s from eight clients on
PostgreSQL with one of its two workers serving all eight connections. Here each worker binds
its own socket to the address with SO_REUSEPORT and the kernel spreads new connections over
the workers by a hash of their addresses (as nginx's `listen ... reuseport` does); a worker that
dies takes only its own socket with it, and uvicorn's supervisor starts another. Where the
platform has no SO_REUSEPORT, the workers share one socket as uvicorn's do.

    python -m unforgetter.serve --host 127.0.0.1 --port 8000 --workers 2

The app runs as `make run` serves it: lifespan on, uvicorn's proxy headers off (the app decides
whom it believes: unforgetter.asgi.behind_proxies), no access log (the app logs each request).
"""

from __future__ import annotations

import argparse
import logging
import os
import socket

import uvicorn
from uvicorn.supervisors import multiprocess

logger = logging.getLogger("uvicorn.error")

APP = "unforgetter.asgi:application"


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) that other such sockets may bind too (SO_REUSEPORT)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Worker(multiprocess.Process):
    """A uvicorn worker that serves a socket of its own on the address the parent holds."""

    def target(self, sockets: list[socket.socket] | None = None) -> None:  # pragma: no cover
        own = []
        for inherited in sockets or []:
            host, port = inherited.getsockname()[:2]
            own.append(reuse_port_socket(host, port))
            inherited.close()  # never listened on: only the workers' own sockets take connections
        super().target(own)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=cores(), help="default: one per core")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    config = uvicorn.Config(
        APP,
        host=args.host,
        port=args.port,
        workers=args.workers,
        lifespan="on",
        proxy_headers=False,
        access_log=False,
        log_level=args.log_level,
    )
    if args.workers <= 1:
        uvicorn.Server(config).run()
        return
    if not hasattr(socket, "SO_REUSEPORT"):
        multiprocess.Multiprocess(config, sockets=[config.bind_socket()]).run()  # uvicorn's own way
        return
    # The parent holds the address (bound, never listening), so that a port already taken fails
    # here, once; each worker then binds a socket of its own beside it.
    try:
        held = reuse_port_socket(args.host, args.port)
    except OSError as exc:
        logger.error("cannot serve on %s:%d: %s", args.host, args.port, exc)
        raise SystemExit(3) from exc
    logger.info("%d workers on %s:%d, each on a socket of its own", args.workers, args.host, args.port)
    multiprocess.Process = _Worker  # type: ignore[misc]  # the supervisor starts (and restarts) these
    multiprocess.Multiprocess(config, sockets=[held]).run()


if __name__ == "__main__":
    main()
