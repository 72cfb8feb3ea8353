"""The OAuth scopes of the MCP resource, and what a Connection's role allows of them.

A personal token carries the scopes of its role; an OAuth token carries what was consented,
narrowed to the role. Nothing else grants a scope.
"""

from __future__ import annotations

from collections.abc import Iterable

from workspaces.models import Connection

SCOPE_READ = "memory:read"
SCOPE_PROPOSE = "memory:propose"


def scopes_for_role(role: str) -> frozenset[str]:
    """The OAuth scopes a Connection's role allows: readers read, contributors also propose."""
    if role == Connection.Role.CONTRIBUTOR:
        return frozenset({SCOPE_READ, SCOPE_PROPOSE})
    return frozenset({SCOPE_READ})


def scopes_granted(role: str, requested: Iterable[str]) -> list[str]:
    """What a consent grants: the requested scopes the role allows, and always memory:read."""
    allowed = scopes_for_role(role)
    return list(dict.fromkeys([SCOPE_READ, *(s for s in requested if s in allowed)]))
