"""Who reaches a console page: the member's Console, the access decorator and the CSP.

Every workspace-scoped view goes through `console_view`, which resolves the workspace with
`workspace_for_user` (404 for anyone who is not a member, never 403) and, for owner-only actions,
refuses reviewers with 403. Every object lookup inside is filtered by that workspace, so another
workspace's objects are 404 too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, wraps
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from console import selectors
from workspaces.exceptions import NotFound, UnforgetterError
from workspaces.headers import CONTENT_SECURITY_POLICY
from workspaces.models import Membership, Workspace
from workspaces.selectors import (
    membership_for,
    workspace_for_user,
)

PAGE_SIZE = 50


def with_csp(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return wrapped


@dataclass
class Console:
    """The member's view of one workspace, passed to every scoped view and template."""

    workspace: Workspace
    membership: Membership
    user: User

    @property
    def is_owner(self) -> bool:
        return self.membership.role == Membership.Role.OWNER

    @cached_property
    def pending_review(self) -> int:
        return selectors.pending_review_count(self.workspace)

    def url(self, name: str, *args: Any) -> str:
        return reverse(f"console:{name}", args=[self.workspace.slug, *args])


View = Callable[..., HttpResponse]


def console_view(*, methods: tuple[str, ...] = ("GET",), owner_only: bool = False) -> Callable[[View], View]:
    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            user = cast(User, request.user)
            try:
                workspace = workspace_for_user(user, slug)
            except NotFound:
                raise Http404("No such workspace.") from None
            membership = membership_for(user, workspace)
            if membership is None:
                raise Http404("No such workspace.")
            console = Console(workspace=workspace, membership=membership, user=user)
            if owner_only and not console.is_owner:
                raise PermissionDenied("Only the workspace's owners can do this.")
            try:
                return view(request, console, *args, **kwargs)
            except NotFound as exc:
                raise Http404(exc.message) from None

        return cast(View, with_csp(login_required(require_http_methods(list(methods))(wrapped))))

    return decorate


def paged(request: HttpRequest, rows: QuerySet[Any]) -> tuple[Page[Any], str]:
    """The requested page of a list, and the list's query string without the page number."""
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return page, query.urlencode()


def render_page(
    request: HttpRequest, console: Console, template: str, context: dict[str, Any]
) -> HttpResponse:
    return render(request, f"console/{template}", {"console": console, **context})


def service_error(request: HttpRequest, exc: UnforgetterError) -> None:
    messages.error(request, exc.message)


def form_errors(request: HttpRequest, form: forms.BaseForm, prefix: str = "") -> None:
    """Each of a form's errors as a message, after `prefix` (what the form was for) when given."""
    for errors in form.errors.values():
        for error in errors:
            messages.error(request, f"{prefix}{error}")
