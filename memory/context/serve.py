"""Serving a bundle: the cache, the context id, the audit record, freshness and identity.

A bundle is keyed by (credential scope, project, task, content version): an identical request
between two changes of memory is served from the cache with the same `context_id`, and a
publication that changed memory changes the key, so published changes are visible on the very
next call in every process. Heartbeat publications move `compiled_at` but keep the key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from memory.context.compile import compile_bundle
from memory.contract import Bundle, CompiledBundle, ErrorBody, Freshness, Identity
from memory.retrieval import (
    IndexesProbe,
    embeds_queries,
    prefetch_query_text,
    prefetch_query_vector,
    ranking_probe,
)
from memory.selectors import ProjectAt, latest_publication, project_for_context_beside
from memory.services import context_request_record
from workspaces.after_answer import after_answer
from workspaces.caches import cache
from workspaces.models import Project, default_publish_cadence
from workspaces.scope import AgentScope


def _context_id(scope: AgentScope, project: Project, task: str, version: int) -> str:
    # The scope's fingerprint: a credential whose authority changed gets a bundle of its own.
    key = f"{scope.fingerprint()}:{project.pk}:{version}:{task}".encode()
    return "ctx_" + hashlib.sha256(key).hexdigest()[:28]


def context_for_agent(*, scope: AgentScope, project: Project, task: str) -> Bundle:
    """Serve the bundle for a task: from the cache when this publication already compiled it."""
    return context_at(scope=scope, at=ProjectAt(project, latest_publication(scope.workspace_id)), task=task)


# Projects, by (credential scope, slug), whose tasks this process embeds, with their ids: a call
# naming one again starts embedding its task before the project is read, and reads what its
# indexes have not seen in the project's statement (`ranking_probe`), a statement fewer. Keyed by
# the scope's fingerprint, so a call's timing tells nothing of a project its credential could not
# read (it is refused all the same, and what was read beside it is not used).
EMBEDDING_PROJECTS_KEPT = 10_000
_embedding_projects: dict[tuple[str, str], int] = {}


def context_named(*, scope: AgentScope, project_id: str, task: str) -> Bundle:
    """`context_at` for a project named by its slug, read with `project_for_context` (refused
    as `project_for_agent` refuses): what get_context does."""
    known = (scope.fingerprint(), project_id)
    embedding = _embedding_projects.get(known)
    probe = None
    if embedding is not None:
        prefetch_query_text(task)
        probe = ranking_probe(embedding)
    at, values = project_for_context_beside(scope, project_id, probe.beside if probe else None)
    probed = (probe, values) if probe is not None and at.project.pk == embedding else None
    bundle = context_at(scope=scope, at=at, task=task, probed=probed)
    # Asked once served: the first call of a process loads the project's vectors.
    if embedding != at.project.pk and embeds_queries(at.project.pk):
        if len(_embedding_projects) >= EMBEDDING_PROJECTS_KEPT:
            _embedding_projects.clear()
        _embedding_projects[known] = at.project.pk
    return bundle


def embedding_projects_clear() -> None:
    """Forget which projects' tasks were embedded (ids are reused, e.g. by flushed test databases)."""
    _embedding_projects.clear()


def context_at(
    *, scope: AgentScope, at: ProjectAt, task: str, probed: tuple[IndexesProbe, Sequence[Any]] | None = None
) -> Bundle:
    """`context_for_agent` for a project read with its workspace's newest publication
    (`project_for_context`: one statement for both), and with it `probed`, the project's
    `ranking_probe` and its values, if read."""
    project, publication = at
    prefetch_query_vector(project.pk, task)
    now = timezone.now()
    # Keyed by the last publication that changed memory: heartbeats keep the cache (and the
    # context_id), a published change replaces both in every process at once.
    version = (publication.content_version or publication.version) if publication else 0
    compiled_at = publication.compiled_at if publication else None
    cadence = publication.publish_cadence if publication else default_publish_cadence()
    context_id = _context_id(scope, project, task, version)
    cache_key = f"unforgetter:context:{context_id}"
    bundle: CompiledBundle | None = cache.get(cache_key)
    if bundle is None:
        compiled = compile_bundle(
            scope, project, task, now, version=version if publication else None, probed=probed
        )

        def record_and_keep() -> None:
            context_request_record(
                context_id=context_id,
                scope=scope,
                project=project,
                task=task,
                publication_version=version,
                refs=compiled["served"],
            )
            cache.set(cache_key, compiled, timeout=int(cadence.total_seconds()) * 10)

        # The audit record and the cache change nothing the agent is sent: where the server
        # can, they are done once the answer is on its way (workspaces.after_answer).
        after_answer(record_and_keep)
        bundle = compiled
    return _serve(bundle, context_id, scope, compiled_at, cadence, now)


def _serve(
    bundle: CompiledBundle,
    context_id: str,
    scope: AgentScope,
    compiled_at: datetime | None,
    cadence: timedelta,
    now: datetime,
) -> Bundle:
    # replica_at: when this process confirmed what it serves against the primary (just now).
    stale = compiled_at is None or now - compiled_at > cadence
    warnings: list[ErrorBody] = []
    if stale:
        warnings.append(
            ErrorBody(
                code="stale_replica",
                message="This memory was last published longer ago than the publish cadence.",
                action="Proceed with caution and cite freshness, or wait for the next publish cycle.",
            )
        )
    return Bundle(
        context_id=context_id,
        freshness=Freshness(
            compiled_at=compiled_at.isoformat() if compiled_at else None,
            replica_at=now.isoformat(),
            publish_cadence_seconds=int(cadence.total_seconds()),
            stale=stale,
        ),
        identity=Identity(actor=scope.actor, trust_zone=scope.zone, role=scope.role),
        **bundle["sections"],
        warnings=warnings,
    )
