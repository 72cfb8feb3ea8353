"""The REST API for scripts and snapshot prefetch (e.g. a Codex Cloud set-up step).

Same credentials, scoping and payloads as the MCP tools; errors are RFC 9457 problem JSON with the
same stable codes (api/problems.py). The OpenAPI document describes every response and error
with the schemas the MCP tools publish.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.authentication import ConnectionAuthentication
from api.problems import PROBLEM_SCHEMA, problem_exception_handler
from memory.context import bundle_markdown, context_named
from memory.contract import Bundle, SearchPage
from memory.contract import ProjectList as ProjectListPayload
from memory.contract_schemas import contract_schema
from memory.metrics import CALL_SECONDS
from memory.selectors import projects_for_agent, search_named
from workspaces.exceptions import InvalidRequest
from workspaces.limits import credential_rate_check, credential_slot
from workspaces.scope import AgentScope


# drf-spectacular's extension registry (__init_subclass__) is untyped.
class ConnectionAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "api.authentication.ConnectionAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An Unforgetter token (unf_...) or OAuth token.",
        }


__all__ = ["ProjectContext", "ProjectList", "ProjectSearch", "ProjectSnapshot", "problem_exception_handler"]


def _responses(payload: Any, *errors: int) -> dict[Any, OpenApiResponse]:
    """The operation's 200 body and its problem-JSON errors (401 always: every call needs a token)."""
    problem = OpenApiResponse(response=PROBLEM_SCHEMA, description="Problem JSON (application/problem+json)")
    problems = {(status, "application/problem+json"): problem for status in (401, *errors)}
    return {(200, "application/json"): OpenApiResponse(response=contract_schema(payload)), **problems}


class AgentAPIView(APIView):
    """A read for an agent credential, under the same per-credential limits as the MCP tools."""

    authentication_classes = [ConnectionAuthentication]
    permission_classes = [IsAuthenticated]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        self._slot = ExitStack()
        try:
            with CALL_SECONDS.labels(f"rest:{type(self).__name__}").time():
                return super().dispatch(request, *args, **kwargs)
        finally:
            self._slot.close()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authenticates: request.auth is the scope
        connection_id = self.scope(request).connection_id
        self._slot.enter_context(credential_slot(connection_id))
        credential_rate_check(connection_id)

    def scope(self, request: Request) -> AgentScope:
        assert isinstance(request.auth, AgentScope)
        return request.auth


class _ContextQuery(serializers.Serializer[Any]):
    task = serializers.CharField(max_length=2000)


class _SearchQuery(serializers.Serializer[Any]):
    q = serializers.CharField(max_length=500)
    cursor = serializers.CharField(max_length=512, required=False)


def _valid(serializer: serializers.Serializer[Any]) -> dict[str, Any]:
    if not serializer.is_valid():
        field, errors = next(iter(serializer.errors.items()))
        raise InvalidRequest(f"{field}: {errors[0]}")
    return dict(serializer.validated_data)


class ProjectList(AgentAPIView):
    @extend_schema(
        summary="The projects this credential may use (list_projects).",
        responses=_responses(ProjectListPayload, 429),
    )
    def get(self, request: Request) -> Response:
        return Response(projects_for_agent(self.scope(request)))


class ProjectContext(AgentAPIView):
    @extend_schema(
        summary="The compiled context bundle for a task (get_context).",
        parameters=[OpenApiParameter("task", str, required=True)],
        responses=_responses(Bundle, 400, 403, 404, 429),
    )
    def get(self, request: Request, project_id: str) -> Response:
        task = _valid(_ContextQuery(data=request.query_params))["task"]
        scope = self.scope(request)
        return Response(context_named(scope=scope, project_id=project_id, task=task))


class ProjectSearch(AgentAPIView):
    @extend_schema(
        summary="One page of full-text search results (search_memory).",
        parameters=[OpenApiParameter("q", str, required=True), OpenApiParameter("cursor", str)],
        responses=_responses(SearchPage, 400, 403, 404, 429),
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = _valid(_SearchQuery(data=request.query_params))
        scope = self.scope(request)
        return Response(
            search_named(scope=scope, project_id=project_id, query=query["q"], cursor=query.get("cursor"))
        )


class ProjectSnapshot(AgentAPIView):
    """The context bundle as Markdown with provenance, for a cloud agent's set-up step (curl only)."""

    @extend_schema(
        summary="The context bundle for a task as Markdown, every item with its ref and provenance.",
        parameters=[OpenApiParameter("task", str, required=True)],
        responses={
            (200, "text/markdown"): OpenApiResponse(response=str),
            **{
                (status, "application/problem+json"): OpenApiResponse(response=PROBLEM_SCHEMA)
                for status in (400, 401, 403, 404, 429)
            },
        },
    )
    def get(self, request: Request, project_id: str) -> HttpResponse:
        task = _valid(_ContextQuery(data=request.query_params))["task"]
        scope = self.scope(request)
        bundle = context_named(scope=scope, project_id=project_id, task=task)
        return HttpResponse(bundle_markdown(bundle), content_type="text/markdown; charset=utf-8")
