"""Public pages: `/` and the quickstarts at the URL the OAuth metadata advertises as documentation.

No sign-in: a client's user lands here from the protected-resource metadata or the README, and
nothing on them is workspace data (the URLs and snippets are the server's own).
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from console.access import with_csp
from workspaces.snippets import agent_brief, client_snippets, snapshot_commands


@require_http_methods(["GET", "HEAD"])
def root(request: HttpRequest) -> HttpResponse:
    """`/`: the console for a signed-in owner, the quickstarts for everyone else."""
    return redirect("console:home" if request.user.is_authenticated else "console:quickstart")


@with_csp
@require_http_methods(["GET", "HEAD"])
def quickstart(request: HttpRequest) -> HttpResponse:
    mcp_url = str(settings.MCP_RESOURCE_URL)
    context = {
        "mcp_url": mcp_url,
        "snippets": client_snippets(mcp_url),
        "agent_brief": agent_brief(mcp_url),
        "snapshot": snapshot_commands(str(settings.PUBLIC_URL), "PROJECT_ID"),
    }
    return render(request, "console/quickstart.html", context)
