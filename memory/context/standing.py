"""The task-independent part of a bundle, compiled once per content version and kept in the process.

Policies, the newest open threads and the newest facts do not depend on the task: every bundle of
a project between two changes of memory starts from the same ones. They are compiled on first use
after a publication that changed memory and kept here, so the request path only ranks the
task-specific part.

The key holds everything that decides which of the project's items a credential sees (see
`AgentScope.item_filter`): the workspace, the project (already resolved as visible), the content
version and the visible data classes (never `restricted`). Two credentials share an entry only
when they would read the very same rows; a published change moves the version, so no entry is
ever served after the memory it was compiled from changed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from workspaces.models import Project
from workspaces.scope import AgentScope

T = TypeVar("T")

# Entries are a few dozen rows each; this many covers every active (project, version, classes).
MAX_ENTRIES = 128


def standing_key(scope: AgentScope, project: Project, version: int) -> tuple[object, ...]:
    """What decides the standing part's rows: project, content version and visible classes."""
    return (scope.workspace_id, project.pk, version, scope.visible_classes)


class StandingCache(Generic[T]):
    """A bounded, thread-safe LRU of compiled standing parts; values are never copied."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[tuple[object, ...], T] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def get_or_compile(self, key: tuple[object, ...], compile_part: Callable[[], T]) -> T:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        # Compiled outside the lock: two threads may both compile a new version once; both
        # results are the same rows.
        value = compile_part()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
