"""Read ahead in a forked process: the next values of an iterator, made on a core of their own.

`memory.read_ahead` makes them in a thread, which overlaps the database's work but not Python's:
an import's reading, checks and screening of a batch (pure Python, about 40 us an item, most of
it the secret scan) and its writing of the batch before take turns on the GIL, and on PostgreSQL,
whose COPY leaves the GIL free most of the time, the import waited on its own checks. Here the
iterator runs in a child forked from the calling process, which makes its values on the other
core and hands them over pickled through a pipe, at most `depth` ahead of the consumer.

Errors keep their place: an exception raised by the iterator is raised to the consumer where the
value it was making would have been taken, as `read_ahead` does (an exception that cannot be
pickled arrives as a RuntimeError naming it). The iterator must not touch the database.

For a process that owns its threads, such as a management command, never a server: a fork copies
only the calling thread, and a child of a busy multi-threaded process could inherit a lock another
thread held. The child uses nothing it inherited but the iterator (not the database connection,
not the other threads' state) and ends with `os._exit`, which closes nothing the parent still
uses. Stopping early (an exception, a `break`) kills the child.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Iterator
from typing import Any, BinaryIO, TypeVar

T = TypeVar("T")

_VALUE, _ERROR, _END = 0, 1, 2


def forked_ahead(source: Iterator[T], *, depth: int = 2) -> Iterator[T]:
    """The values of `source` (not yet started), made in a forked child up to `depth` ahead."""
    values_read, values_write = os.pipe()
    acks_read, acks_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: make the values, then leave without any cleanup of the parent's
        status = 1
        try:
            os.close(values_read)
            os.close(acks_write)
            with os.fdopen(values_write, "wb") as out:
                _produce(source, out, acks_read, depth)
            status = 0
        finally:
            os._exit(status)
    os.close(values_write)
    os.close(acks_read)
    try:
        with os.fdopen(values_read, "rb") as values, os.fdopen(acks_write, "wb", buffering=0) as acks:
            while True:
                try:
                    # Our own child's pickles, through a pipe only it and this process hold.
                    kind, payload = pickle.load(values)  # noqa: S301
                except EOFError:
                    raise RuntimeError("The process reading ahead ended without its values.") from None
                if kind == _ERROR:
                    raise payload
                if kind == _END:
                    return
                with contextlib.suppress(BrokenPipeError):  # it sent all it had and ended
                    acks.write(b".")
                yield payload
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # done by now, unless the consumer stopped early
        os.waitpid(pid, 0)


def _produce(source: Iterator[Any], out: BinaryIO, acks: int, depth: int) -> None:
    sent = 0
    try:
        for value in source:
            if sent >= depth:
                os.read(acks, 1)  # wait until the consumer took one: at most `depth` ahead
            pickle.dump((_VALUE, value), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
            sent += 1
    except Exception as exc:
        _send_error(out, exc)
        return
    pickle.dump((_END, None), out)


def _send_error(out: BinaryIO, exc: Exception) -> None:
    try:
        pickled = pickle.dumps((_ERROR, exc), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(pickled)  # noqa: S301 - its own pickle: one that cannot be rebuilt is sent by name
    except Exception:
        pickled = pickle.dumps((_ERROR, RuntimeError(f"{type(exc).__name__}: {exc}")))
    out.write(pickled)
