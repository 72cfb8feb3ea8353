"""The REST API for scripts and snapshot prefetch (e.g. a Codex Cloud set-up step).

Same credentials, scoping and payloads as the MCP tools; errors are RFC 9457 problem JSON with the
same stable codes.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, exception_handler

from api.authentication import ConnectionAuthentication
from memory.context import context_for_agent
from memory.selectors import projects_for_agent, search_for_agent
from workspaces.exceptions import InvalidRequest, RateLimited, UnforgetterError
from workspaces.limits import credential_rate_check, credential_slot
from workspaces.scope import AgentScope
from workspaces.selectors import project_for_agent


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """UnforgetterError -> problem JSON with its code and action; everything else as DRF does."""
    if isinstance(exc, UnforgetterError):
        body = {
            "type": f"https://unforgetter.com/docs/errors#{exc.code}",
            "title": exc.code.replace("_", " "),
            "status": exc.http_status,
            "detail": exc.message,
            "code": exc.code,
            "action": exc.action,
        }
        if isinstance(exc, RateLimited):
            body["retry_after"] = exc.retry_after
        response = Response(body, status=exc.http_status, content_type="application/problem+json")
        if isinstance(exc, RateLimited):
            response["Retry-After"] = str(exc.retry_after)
        return response
    return exception_handler(exc, context)


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


class AgentAPIView(APIView):
    """A read for an agent credential, under the same per-credential limits as the MCP tools."""

    authentication_classes = [ConnectionAuthentication]
    permission_classes = [IsAuthenticated]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        self._slot = ExitStack()
        try:
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
        summary="The projects this credential may use (list_projects).", responses=OpenApiTypes.OBJECT
    )
    def get(self, request: Request) -> Response:
        return Response(projects_for_agent(self.scope(request)))


class ProjectContext(AgentAPIView):
    @extend_schema(
        summary="The compiled context bundle for a task (get_context).",
        parameters=[OpenApiParameter("task", str, required=True)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, project_id: str) -> Response:
        task = _valid(_ContextQuery(data=request.query_params))["task"]
        scope = self.scope(request)
        project = project_for_agent(scope, project_id)
        return Response(context_for_agent(scope=scope, project=project, task=task))


class ProjectSearch(AgentAPIView):
    @extend_schema(
        summary="One page of full-text search results (search_memory).",
        parameters=[OpenApiParameter("q", str, required=True), OpenApiParameter("cursor", str)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = _valid(_SearchQuery(data=request.query_params))
        scope = self.scope(request)
        project = project_for_agent(scope, project_id)
        return Response(
            search_for_agent(scope=scope, project=project, query=query["q"], cursor=query.get("cursor"))
        )
