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
