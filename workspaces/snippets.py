"""Ready-to-paste client configuration for a credential, as verified in shared/CLIENTS.md.

Snippets keep the token out of config files where the client can expand an environment
variable (UNFORGETTER_TOKEN); the token itself is shown beside them once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ENV_VAR = "UNFORGETTER_TOKEN"


@dataclass(frozen=True)
class Snippet:
    client: str
    where: str
    language: str
    text: str


def client_snippets(mcp_url: str) -> list[Snippet]:
    claude_json = {
        "mcpServers": {
            "unforgetter": {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": f"Bearer ${{{ENV_VAR}}}"},
            }
        }
    }
    cursor_json = {
        "mcpServers": {
            "unforgetter": {"url": mcp_url, "headers": {"Authorization": f"Bearer ${{env:{ENV_VAR}}}"}}
        }
    }
    vscode_json = {
        "inputs": [
            {
                "type": "promptString",
                "id": "unforgetter-token",
                "description": "Unforgetter token",
                "password": True,
            }
        ],
        "servers": {
            "unforgetter": {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": "Bearer ${input:unforgetter-token}"},
            }
        },
    }
    gemini_json = {
        "mcpServers": {
            "unforgetter": {"httpUrl": mcp_url, "headers": {"Authorization": f"Bearer ${{{ENV_VAR}}}"}}
        }
    }
    return [
        Snippet(
            "Claude Code",
            "shell",
            "bash",
            f"claude mcp add --scope user --transport http unforgetter {mcp_url} \\\n"
            f"  --header 'Authorization: Bearer ${{{ENV_VAR}}}'",
        ),
        Snippet("Claude Code (project)", ".mcp.json", "json", json.dumps(claude_json, indent=2)),
        Snippet("Cursor", "~/.cursor/mcp.json", "json", json.dumps(cursor_json, indent=2)),
        Snippet("VS Code / Copilot", ".vscode/mcp.json", "json", json.dumps(vscode_json, indent=2)),
        Snippet(
            "Codex CLI",
            "shell",
            "bash",
            f"codex mcp add unforgetter --url {mcp_url} --bearer-token-env-var {ENV_VAR}",
        ),
        Snippet("Gemini CLI", "~/.gemini/settings.json", "json", json.dumps(gemini_json, indent=2)),
        Snippet(
            "MCP Inspector CLI",
            "shell",
            "bash",
            f"npx -y @modelcontextprotocol/inspector@2.12.0 --cli {mcp_url} \\\n"
            f'  --transport http --header "Authorization: Bearer ${ENV_VAR}" --method tools/list',
        ),
        Snippet(
            "ChatGPT (developer mode)",
            "Settings → Apps → Create app",
            "text",
            f"MCP Server URL: {mcp_url}\nAuthentication: OAuth (ChatGPT cannot send a static token; "
            "it needs a public HTTPS URL).",
        ),
    ]


SNAPSHOT_DIR = ".unforgetter"


def snapshot_commands(public_url: str, project: str) -> dict[str, str]:
    """A cloud agent's set-up step that writes the project's bundle to `.unforgetter/`.

    `context.md` (Markdown with provenance, for the agent to read) and `context.json` (the same
    bundle as get_context returns it). Needs only curl, or only Python's standard library, and
    the token in UNFORGETTER_TOKEN; UNFORGETTER_TASK narrows the bundle to the task at hand.
    """
    base = f"${{UNFORGETTER_URL:-{public_url}}}/api/v1/projects/{project}"
    task = "${UNFORGETTER_TASK:-working in this repository}"
    curl = (
        f"mkdir -p {SNAPSHOT_DIR}\n"
        f'for target in "snapshot.md context.md" "context/ context.json"; do\n'
        "  set -- $target\n"
        f'  curl -fsS --get -H "Authorization: Bearer ${ENV_VAR}" --data-urlencode "task={task}" \\\n'
        f'    "{base}/$1" -o "{SNAPSHOT_DIR}/$2" || exit 1\n'
        "done"
    )
    python = (
        "python3 - <<'PY'\n"
        "import os, pathlib, urllib.parse, urllib.request\n"
        f'base = os.environ.get("UNFORGETTER_URL", "{public_url}") + "/api/v1/projects/{project}/"\n'
        'task = os.environ.get("UNFORGETTER_TASK", "working in this repository")\n'
        'query = urllib.parse.urlencode({"task": task})\n'
        f'out = pathlib.Path("{SNAPSHOT_DIR}"); out.mkdir(exist_ok=True)\n'
        'for path, name in (("snapshot.md", "context.md"), ("context/", "context.json")):\n'
        f'    headers = {{"Authorization": "Bearer " + os.environ["{ENV_VAR}"]}}\n'
        '    request = urllib.request.Request(base + path + "?" + query, headers=headers)\n'
        "    with urllib.request.urlopen(request, timeout=30) as response:\n"
        "        (out / name).write_bytes(response.read())\n"
        "PY"
    )
    return {"curl": curl, "python": python}


def agent_brief(mcp_url: str) -> str:
    """Markdown to paste to an agent (or into AGENTS.md / CLAUDE.md): how to use this memory."""
    return f"""## Team memory: Unforgetter

This project's shared memory is the MCP server `unforgetter` at {mcp_url} (a bearer token from
the environment variable `{ENV_VAR}`, or OAuth). Use it on every task:

1. `list_projects`: the projects you may use; pass an `id` from it as `project_id`.
2. `get_context` with the task in a sentence, **before you start**: follow its `policies`, use its
   facts, decisions, conventions and methods, and cite an item's ref and source when you rely on it.
3. `search_memory` to dig deeper, or with a pointer's ref to fetch that item.
4. `propose_memory` when you learn something the team should keep (a decision, a convention, a
   fact, an open question): add evidence and your own unique `request_id`. You cannot write memory
   directly; proposals are validated and published, or reviewed by the owner.

Errors carry a `code` and an `action`: do what the action says (`forbidden_scope`: call
`list_projects`; `protected_target`: do not retry, tell the owner).
If `.unforgetter/context.md` exists (a cloud set-up step wrote it), read it first.
"""
