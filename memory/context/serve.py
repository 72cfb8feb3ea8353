"""Serving a bundle: the cache, the context id, the audit record, freshness and identity.

A bundle is keyed by (credential scope, project, task, content version): an identical request
between two changes of memory is served from the cache with the same `context_id`, and a
publication that changed memory changes the key, so published changes are visible on the very
next call in every process. Heartbeat publications move `compiled_at` but keep the key.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from functools import partial

from django.utils import timezone

from memory.context.compile import compile_bundle
from memory.contract import Bundle, CompiledBundle, ErrorBody, Freshness, Identity
from memory.retrieval import NamedProject, Probed, prefetch_query_vector
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


def context_named(*, scope: AgentScope, project_id: str, task: str) -> Bundle:
    """`context_at` for a project named by its slug, read with `project_for_context` (refused
    as `project_for_agent` refuses): what get_context does. A project this scope named before
    has its task embedded and its indexes probed early (memory.retrieval.NamedProject)."""
    named = NamedProject(scope, project_id, task)
    at, values = project_for_context_beside(scope, project_id, named.beside)
    bundle = context_at(scope=scope, at=at, task=task, probed=named.probed(at.project, values))
    named.served(at.project)
    return bundle


def context_at(*, scope: AgentScope, at: ProjectAt, task: str, probed: Probed | None = None) -> Bundle:
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

        # The audit record and the cache change nothing the agent is sent: where the server
        # can, the record is queued and written with others a moment later (write-behind), and
        # the bundle kept once the answer is on its way (workspaces.after_answer).
        context_request_record(
            context_id=context_id,
            scope=scope,
            project=project,
            task=task,
            publication_version=version,
            refs=compiled["served"],
        )
        after_answer(partial(cache.set, cache_key, compiled, timeout=int(cadence.total_seconds()) * 10))
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
