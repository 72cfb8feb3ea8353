"""The authorization server's own views: DOT's, narrowed and given our consent page.

- `ProtectedResourceMetadataView`: RFC 9728 for the `/mcp` resource, at the root and path forms.
- `RegistrationView`: RFC 7591 open registration, throttled per address, redirect URIs limited
  to https or http loopback, authorization-code clients only.
- `ConsentView`: the authorize endpoint. PKCE S256 and `resource` = our `/mcp` are required;
  approving creates the Connection the client's tokens will carry.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.scopes import get_scopes_backend
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
)
from oauth2_provider.views.metadata import OAuthProtectedResourceMetadataView
from oauthlib.oauth2.rfc6749 import errors as oauth_errors

from workspaces.exceptions import UnforgetterError
from workspaces.forms import ConsentForm
from workspaces.models import Workspace
from workspaces.oauth import redirect_uri_problem, registration_throttle_hit, resource_error
from workspaces.services import oauth_connection_grant, oauth_registration_withdraw

REGISTRATION_LABELS = {
    "manual": "registered by an operator",
    "dcr": "registered itself by dynamic client registration",
    "cimd": "identified by its client metadata document",
}


class ProtectedResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728: the resource is exactly our `/mcp` URL; we are its authorization server."""

    def get_resource(self, request: HttpRequest) -> str:
        return str(settings.MCP_RESOURCE_URL)

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [str(settings.PUBLIC_URL)]

    def get_resource_documentation(self) -> str:
        return f"{settings.PUBLIC_URL}/console/docs/mcp/"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().get(request, *args, **kwargs)
        response["Cache-Control"] = "public, max-age=300"
        return response


def _client_address(request: HttpRequest) -> str:
    # The ASGI router sets the client address from X-Forwarded-For only for TRUSTED_PROXIES
    # (uvicorn runs with --no-proxy-headers), so REMOTE_ADDR is the address to throttle on.
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _registration_error(error: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration, open to anyone but throttled per client address."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = registration_throttle_hit(_client_address(request))
        if wait is not None:
            response = _registration_error(
                "rate_limited", f"Too many client registrations from this address; retry in {wait} s.", 429
            )
            response["Retry-After"] = str(wait)
            return response
        refused = _parsed_problem(request)
        if refused is not None:
            return refused
        registered: HttpResponse = super().post(request, *args, **kwargs)
        return registered


def _parsed_problem(request: HttpRequest) -> JsonResponse | None:
    try:
        metadata = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return None  # DOT answers malformed bodies itself
    return _metadata_problem(metadata) if isinstance(metadata, dict) else None


class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """RFC 7592, under the same client policy as registration.

    A client that deletes its registration after someone consented to it loses its connections
    (revoked, with their tokens) but its record stays, unusable, so the connections and their
    audit trail keep pointing at what they were granted to.
    """

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        auth = self._authenticate_registration_request(request, client_id)
        if isinstance(auth, HttpResponse):
            return auth
        refused = _parsed_problem(request)
        if refused is not None:
            return refused
        updated: HttpResponse = super().put(request, client_id, *args, **kwargs)
        return updated

    def delete(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        auth = self._authenticate_registration_request(request, client_id)
        if isinstance(auth, HttpResponse):
            return auth
        if not oauth_registration_withdraw(
            application=auth.application, registration_token=auth.registration_token
        ):
            deleted: HttpResponse = super().delete(request, client_id, *args, **kwargs)
            return deleted
        return HttpResponse(status=204)


def _metadata_problem(metadata: dict[str, Any]) -> JsonResponse | None:
    """OAuth 2.1 clients only: authorization code (+ refresh), https or loopback redirect URIs."""
    grant_types = metadata.get("grant_types", ["authorization_code"])
    if isinstance(grant_types, list) and not set(grant_types) <= {"authorization_code", "refresh_token"}:
        return _registration_error(
            "invalid_client_metadata",
            "Only the authorization_code and refresh_token grant types are supported.",
        )
    response_types = metadata.get("response_types", ["code"])
    if isinstance(response_types, list) and not set(response_types) <= {"code"}:
        return _registration_error("invalid_client_metadata", "Only the code response type is supported.")
    redirect_uris = metadata.get("redirect_uris")
    if not isinstance(redirect_uris, list) or not redirect_uris:
        return _registration_error("invalid_redirect_uri", "redirect_uris must list at least one URI.")
    for uri in redirect_uris:
        problem = redirect_uri_problem(uri) if isinstance(uri, str) else "Each redirect URI must be a string."
        if problem is not None:
            return _registration_error("invalid_redirect_uri", problem)
    return None


def _with_iss(uri: str, issuer: str) -> str:
    """RFC 9207: every authorization response, error or not, names the issuer."""
    parts = urlsplit(uri)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "iss"]
    query.append(("iss", issuer))
    return urlunsplit(parts._replace(query=urlencode(query)))


class ConsentView(AuthorizationView):
    """The authorize endpoint with the consent page that scopes the client's Connection."""

    form_class = ConsentForm
    template_name = "oauth2_provider/authorize.html"

    def validate_authorization_request(self, request: HttpRequest) -> tuple[list[str], dict[str, Any]]:
        scopes, credentials = super().validate_authorization_request(request)
        oauthlib_request = credentials.get("request")
        if credentials.get("code_challenge_method") != "S256":
            raise OAuthToolkitError(
                error=oauth_errors.InvalidRequestError(
                    description="PKCE is required with code_challenge_method=S256.", request=oauthlib_request
                )
            )
        problem = resource_error(request.GET.getlist("resource"), request=oauthlib_request)
        if problem is not None:
            raise OAuthToolkitError(error=problem)
        return scopes, credentials

    def redirect(self, redirect_to: str, application: Any) -> HttpResponse:
        response: HttpResponse = super().redirect(
            _with_iss(redirect_to, oauth2_settings.oauth2_authorization_server_issuer(self.request)),
            application,
        )
        return response

    def _client_name(self) -> str:
        client_id = self.request.POST.get("client_id") or self.request.GET.get("client_id") or ""
        application = get_application_model().objects.filter(client_id=client_id).first()
        return (application.name if application else "") or ""

    def get_form_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = super().get_form_kwargs()
        kwargs["user"] = self.request.user
        kwargs["workspace_slug"] = self.request.POST.get("workspace") or self.request.GET.get("workspace")
        kwargs["client_name"] = self._client_name()
        return kwargs

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        form = context["form"]
        client_id = form["client_id"].value() or ""
        application = context.get("application") or (
            get_application_model().objects.filter(client_id=client_id).first()
        )
        redirect_uri = form["redirect_uri"].value() or ""
        requested = (self.request.GET.get("scope") or form["scope"].value() or "").split()
        granted = (form["scope"].value() or "").split()
        all_scopes = get_scopes_backend().get_all_scopes()
        context.update(
            application=application,
            client_name=(application.name if application else "") or "Unnamed client",
            client_id=client_id,
            registration=REGISTRATION_LABELS.get(
                getattr(application, "registration_source", ""), "registered"
            ),
            redirect_host=urlsplit(redirect_uri).netloc,
            redirect_uri=redirect_uri,
            resource=form["resource"].value() or "",
            scope_rows=[(s, all_scopes.get(s, s)) for s in granted],
            ignored_scopes=[s for s in requested if s not in all_scopes],
            owned_workspaces=form.owned,
            chosen_workspace=form.chosen_workspace,
            switch_params=[(k, v) for k, v in self.request.GET.items() if k != "workspace"],
        )
        return context

    def form_valid(self, form: ConsentForm) -> HttpResponse:
        if not form.cleaned_data.get("allow"):
            denied: HttpResponse = super().form_valid(form)
            return denied
        application = get_application_model().objects.filter(client_id=form.cleaned_data["client_id"]).first()
        workspace: Workspace | None = form.chosen_workspace
        if application is None or workspace is None:
            form.add_error(
                None, "This authorization request is no longer valid; start again from your client."
            )
            invalid: HttpResponse = self.form_invalid(form)
            return invalid
        # The Connection and DOT's authorization code commit together or not at all.
        with transaction.atomic():
            try:
                consent = oauth_connection_grant(
                    application=application,
                    user=self.request.user,
                    workspace=workspace,
                    zone=form.cleaned_data["zone"],
                    role=form.cleaned_data["role"],
                    projects=None if form.cleaned_data["all_projects"] else form.cleaned_data["projects"],
                    data_classes=form.cleaned_data["data_classes"],
                    requested_scopes=form.cleaned_data["scope"].split(),
                )
            except UnforgetterError as error:
                transaction.set_rollback(True)
                form.add_error(None, error.message)
                refused: HttpResponse = self.form_invalid(form)
                return refused
            form.cleaned_data["scope"] = " ".join(consent.scopes)
            response: HttpResponse = super().form_valid(form)
            if not self.success_url:
                # No code was issued (oauthlib refused the request): keep no Connection either.
                transaction.set_rollback(True)
        return response
