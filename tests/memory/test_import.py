"""Import through the operator's CLI: idempotent, identity-keeping, all or nothing, every format."""

from __future__ import annotations

import json
import threading
import zipfile
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, SystemCheckError
from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from memory.models import Fact, Kind, State, Taint
from memory.services import fact_create, fact_owner_edit, workspace_erase
from memory.services.facts import _ROW_COLUMNS, _ROW_TYPES
from tests.conftest import Tenant, make_tenant
from workspaces.models import Project

pytestmark = pytest.mark.django_db

CLAUDE_MD = (
    "# Platform\n\nThe API runs on Django.\n\n"
    "## Decisions\n- We chose Celery for background work.\n\n"
    "## Commands\n- `make test` runs the suite.\n- `make run` starts the server.\n"
)


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def imported(project: Project) -> list[tuple[str, str, str]]:
    return sorted(Fact.objects.filter(project=project).values_list("kind", "state", "text"))


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_reimporting_a_claude_md_changes_nothing_and_says_so(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text(CLAUDE_MD)
    platform = tenant.projects["platform"]
    assert "Imported 3 items into acme/platform (unchanged 0, updated 0; markdown)" in run(
        "import_memory", "acme", "platform", str(path)
    )
    first = imported(platform)
    for _ in range(2):
        out = run("import_memory", "acme", "platform", str(path))
        assert "Imported 0 items into acme/platform (unchanged 3, updated 0; markdown)" in out
    assert imported(platform) == first


def test_a_commands_section_becomes_one_method(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text(CLAUDE_MD)
    run("import_memory", "acme", "platform", str(path))
    method = Fact.objects.get(project=tenant.projects["platform"], kind=Kind.METHOD)
    assert method.text.splitlines() == [
        "Commands",
        "- `make test` runs the suite.",
        "- `make run` starts the server.",
    ]


@pytest.mark.parametrize("foreign", ["fct_alpha_0001", "5f0c1a52-8f0e-4f5e-9c53-6e0b2c8d1a7e", "note-12"])
def test_foreign_ids_are_kept_shown_in_provenance_and_supersede_on_change(
    tenant: Tenant, tmp_path: Path, foreign: str
) -> None:
    platform = tenant.projects["platform"]
    path = write_jsonl(tmp_path / "items.jsonl", [{"ref": foreign, "kind": "decision", "text": "Use Redis."}])
    run("import_memory", "acme", "platform", str(path))
    first = Fact.objects.get(project=platform)
    assert first.origin == foreign
    assert first.provenance()["origin"] == foreign
    assert first.ref != foreign

    assert "(unchanged 1, updated 0" in run("import_memory", "acme", "platform", str(path))
    write_jsonl(path, [{"ref": foreign, "kind": "decision", "text": "Use Valkey."}])
    assert "Imported 0 items into acme/platform (unchanged 0, updated 1" in run(
        "import_memory", "acme", "platform", str(path)
    )
    newest = Fact.objects.get(project=platform, state=State.ACTIVE)
    assert (newest.text, newest.origin, newest.supersedes_id) == ("Use Valkey.", foreign, first.pk)
    first.refresh_from_db()
    assert first.state == State.SUPERSEDED
    assert "(unchanged 1, updated 0" in run("import_memory", "acme", "platform", str(path))
    assert Fact.objects.filter(project=platform).count() == 2


def test_an_id_key_is_a_foreign_id_too(tenant: Tenant, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "items.jsonl", [{"id": 12, "text": "Twelve."}, {"id": "12", "text": "Twelve."}]
    )
    assert "Imported 1 items into acme/platform (unchanged 1" in run(
        "import_memory", "acme", "platform", str(path)
    )
    assert Fact.objects.get(project=tenant.projects["platform"]).provenance()["origin"] == "12"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"text": "x", "ref": "' + "r" * 201 + '"}', "longer than 200"),
        ('{"text": "x", "ref": "tab\\there"}', "control characters"),
        ('{"text": "x", "ref": ""}', "is empty"),
        ('{"text": "x", "id": [1]}', "must be a string"),
        ('{"text": "x", "taint": "dirty"}', "taint 'dirty'"),
        ('{"text": "x", "supersedes": "nowhere_123456"}', "neither in the import nor here"),
        ('{"id": "loop", "text": "x", "supersedes": "loop"}', "loops back to itself"),
    ],
)
def test_bad_identities_name_their_line_and_keep_nothing(
    tenant: Tenant, tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"text": "good one"}\n' + line + "\n")
    with pytest.raises(CommandError, match=rf"^line 2: .*{message}"):
        run("import_memory", "acme", "platform", str(path))
    assert not Fact.objects.filter(project=tenant.projects["platform"]).exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "each line must be a JSON object"),
        ('{"text": "x", "colour": "red", "arity": 2}', "unknown key 'arity'"),
        ('{"text": 3}', "'text' and 'kind' must be strings"),
        ('{"text": "x", "kind": null}', "'text' and 'kind' must be strings"),
        ('{"text": "x", "actor": 7, "state": 1}', "'state' must be a string"),
        ('{"text": "x", "source": ["a"]}', "'source' must be a string"),
        ('{"text": "x", "date": "soon", "ref": ""}', "'ref' is empty"),
        ('{"text": "x", "date": "soon", "supersedes": 5.5}', "date 'soon' is not an ISO date"),
        ('{"text": "x", "kind": "rumour"}', "Unknown kind 'rumour'"),
        ('{"text": "   "}', "An item needs text"),
    ],
)
def test_a_bad_line_in_a_later_batch_names_itself_and_keeps_nothing(
    tenant: Tenant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, message: str
) -> None:
    # Batches are read ahead of the one being written: the error still comes, whole, in its place.
    monkeypatch.setattr("memory.imports.BATCH_SIZE", 2)
    path = tmp_path / "items.jsonl"
    path.write_text("".join(f'{{"text": "good {n}"}}\n' for n in range(5)) + line + "\n")
    with pytest.raises(CommandError, match=rf"^line 6: .*{message}"):
        run("import_memory", "acme", "platform", str(path))
    assert not Fact.objects.filter(project=tenant.projects["platform"]).exists()


def test_the_batches_read_ahead_never_touch_the_database(
    tenant: Tenant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another thread would have its own connection, outside the import's transaction.
    monkeypatch.setattr("memory.imports.BATCH_SIZE", 2)
    threads: set[str] = set()
    monkeypatch.setattr(
        "django.db.backends.utils.CursorWrapper.execute",
        _recording(CursorWrapper.execute, threads),
    )
    monkeypatch.setattr(
        "django.db.backends.utils.CursorWrapper.executemany",
        _recording(CursorWrapper.executemany, threads),
    )
    path = write_jsonl(
        tmp_path / "items.jsonl", [{"text": f"Item {i} password=Tr0ub4dor&3x"} for i in range(7)]
    )
    assert "Imported 7 items" in run("import_memory", "acme", "platform", str(path))
    assert threads == {threading.current_thread().name}


def _recording(method: Callable[..., Any], threads: set[str]) -> Callable[..., Any]:
    def recorded(self: CursorWrapper, *args: Any, **kwargs: Any) -> Any:
        threads.add(threading.current_thread().name)
        return method(self, *args, **kwargs)

    return recorded


def test_an_exports_items_import_into_another_workspace_with_refs_remapped(
    tenant: Tenant, other_tenant: Tenant, tmp_path: Path
) -> None:
    fact_create(
        project=tenant.projects["platform"], kind="decision", text="We deploy blue-green.", actor="maria"
    )
    archive = tmp_path / "acme.zip"
    run("export_workspace", "acme", str(archive))
    with zipfile.ZipFile(archive) as opened:
        (tmp_path / "items.jsonl").write_bytes(opened.read("acme/projects/platform/items.jsonl"))
    original = Fact.objects.get(project=tenant.projects["platform"])

    out = run("import_memory", other_tenant.workspace.slug, "platform", str(tmp_path / "items.jsonl"))
    assert "Imported 1 items" in out
    copy = Fact.objects.get(project=other_tenant.projects["platform"])
    assert copy.ref != original.ref
    assert copy.origin == original.ref
    assert (copy.kind, copy.text, copy.actor) == (original.kind, original.text, "maria")
    again = run("import_memory", other_tenant.workspace.slug, "platform", str(tmp_path / "items.jsonl"))
    assert "Imported 0 items" in again
    assert "unchanged 1" in again
    # The source workspace is untouched.
    assert Fact.objects.get(project=tenant.projects["platform"]) == original


def _snapshot(project: Project) -> list[dict[str, Any]]:
    """Everything about a project's items but their refs: text, kind, state, taint, provenance, chain."""
    facts = list(Fact.objects.filter(project=project).select_related("supersedes").order_by("text", "state"))
    return sorted(
        (
            {
                "kind": f.kind,
                "text": f.text,
                "state": f.state,
                "data_class": f.data_class,
                "taint": f.taint,
                "source": f.provenance()["source"],
                "date": f.provenance()["date"],
                "actor": f.actor,
                "supersedes": f.supersedes.text if f.supersedes else None,
            }
            for f in facts
        ),
        key=lambda item: (item["text"], item["state"]),
    )


@pytest.mark.parametrize("elsewhere", ["same-server", "another-server"])
def test_an_export_restores_items_states_history_provenance_and_taint(
    tenant: Tenant, tmp_path: Path, elsewhere: str
) -> None:
    platform = tenant.projects["platform"]
    old = fact_create(
        project=platform, kind="policy", text="Deploy on Tuesdays.", actor="ana", source="adr/3.md"
    )
    fact_owner_edit(fact=old, text="Deploy on Wednesdays.", editor=tenant.owner)
    fact_create(project=platform, kind="thread", text="Who owns backups?", actor="ana", state="closed")
    tainted = fact_create(project=platform, kind="fact", text="A page said so.", actor="agent@web")
    Fact.objects.filter(pk=tainted.pk).update(taint=Taint.UNTRUSTED)
    before = _snapshot(platform)
    archive = tmp_path / "acme.zip"
    run("export_workspace", "acme", str(archive))

    if elsewhere == "another-server":
        # Nothing of the source is left: refs are free, so they are kept.
        refs = set(Fact.objects.filter(project=platform).values_list("ref", flat=True))
        workspace_erase(workspace=tenant.workspace, confirm="acme")
        target = make_tenant("elsewhere").projects["platform"]
    else:
        other = make_tenant("elsewhere")
        target = other.projects["platform"]
    out = run("import_memory", "elsewhere", "platform", str(archive))
    assert "Imported 4 items" in out
    assert "export" in out
    assert _snapshot(target) == before
    if elsewhere == "another-server":
        assert set(Fact.objects.filter(project=target).values_list("ref", flat=True)) == refs
    assert "Imported 0 items into elsewhere/platform (unchanged 4, updated 0" in run(
        "import_memory", "elsewhere", "platform", str(archive)
    )


def test_an_export_with_several_projects_asks_which_one(tenant: Tenant, tmp_path: Path) -> None:
    fact_create(project=tenant.projects["platform"], kind="fact", text="One.", actor="ana")
    fact_create(project=tenant.projects["handbook"], kind="fact", text="Two.", actor="ana")
    out_dir = tmp_path / "export"
    run("export_workspace", "acme", str(out_dir))
    other = make_tenant("beta")
    with pytest.raises(CommandError, match="--source-project"):
        run("import_memory", "beta", "incidents", str(out_dir))
    run("import_memory", "beta", "incidents", str(out_dir), "--source-project", "handbook")
    assert imported(other.projects["incidents"]) == [("fact", "active", "Two.")]


def test_a_damaged_export_is_refused(tenant: Tenant, tmp_path: Path) -> None:
    fact_create(project=tenant.projects["platform"], kind="fact", text="Original.", actor="ana")
    out_dir = tmp_path / "export"
    run("export_workspace", "acme", str(out_dir))
    manifest = out_dir / "manifest.json"
    manifest.write_text(manifest.read_text().replace("Original.", "Forged."))
    other = make_tenant("beta")
    with pytest.raises(CommandError, match="SHA-256"):
        run("import_memory", "beta", "platform", str(out_dir))
    assert not Fact.objects.filter(project=other.projects["platform"]).exists()


def test_the_mcp_memory_servers_knowledge_graph(tenant: Tenant, tmp_path: Path) -> None:
    graph: list[dict[str, Any]] = [
        {"type": "entity", "name": "Billing", "entityType": "service", "observations": ["Runs on Go."]},
        {"type": "entity", "name": "Ana", "entityType": "person", "observations": ["Owns billing."]},
        {"type": "relation", "from": "Ana", "to": "Billing", "relationType": "maintains"},
    ]
    path = write_jsonl(tmp_path / "memory.jsonl", graph)
    assert "Imported 3 items" in run("import_memory", "acme", "platform", str(path))
    platform = tenant.projects["platform"]
    assert (
        Fact.objects.get(project=platform, origin="entity:Billing").text == "Billing (service)\n- Runs on Go."
    )
    assert (
        Fact.objects.get(project=platform, origin="relation:Ana|maintains|Billing").text
        == "Ana maintains Billing"
    )
    graph[0]["observations"] = ["Runs on Go.", "Deployed weekly."]
    write_jsonl(path, graph)
    assert "(unchanged 2, updated 1" in run("import_memory", "acme", "platform", str(path))
    assert Fact.objects.get(project=platform, origin="entity:Billing", state="active").text.endswith(
        "Deployed weekly."
    )
    path.write_text('{"type": "entity", "name": "X", "observations": "not a list"}\n')
    with pytest.raises(CommandError, match="line 1: 'observations' must be a list"):
        run("import_memory", "acme", "platform", str(path))


def test_a_basic_memory_folder(tenant: Tenant, tmp_path: Path) -> None:
    notes = tmp_path / "basic-memory"
    (notes / "decisions").mkdir(parents=True)
    (notes / "decisions" / "queue.md").write_text(
        "---\ntitle: Queue choice\ntype: decision\npermalink: decisions/queue-choice\n---\n\n"
        "# Queue choice\n\nWe use Redis streams.\n\n## Observations\n- [decision] Streams over lists #queue\n"
    )
    (notes / "team.md").write_text("---\ntitle: Team\ntype: note\n---\nAna owns billing.\n")
    assert "Imported 2 items" in run("import_memory", "acme", "platform", str(notes))
    platform = tenant.projects["platform"]
    queue = Fact.objects.get(project=platform, origin="decisions/queue-choice")
    assert queue.kind == Kind.DECISION
    assert queue.text.startswith("Queue choice\nWe use Redis streams.")
    assert queue.source == "decisions/queue.md"
    assert Fact.objects.get(project=platform, origin="team").text == "Team\nAna owns billing."
    assert "(unchanged 2, updated 0" in run("import_memory", "acme", "platform", str(notes))


def test_mem0_and_openmemory_exports(tenant: Tenant, tmp_path: Path) -> None:
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(
        json.dumps(
            {
                "results": [
                    {
                        "id": "m-1",
                        "memory": "Prefers tabs.",
                        "user_id": "ana",
                        "created_at": "2026-01-02T10:00:00Z",
                    },
                    {"id": "m-2", "memory": "Decided on Postgres.", "categories": ["decisions"]},
                ]
            }
        )
    )
    assert "Imported 2 items" in run("import_memory", "acme", "platform", str(mem0))
    platform = tenant.projects["platform"]
    tabs = Fact.objects.get(project=platform, origin="m-1")
    assert tabs.provenance() == {
        "source": "mem0:mem0.json",
        "date": "2026-01-02",
        "actor": "mem0:ana",
        "origin": "m-1",
    }
    assert Fact.objects.get(project=platform, origin="m-2").kind == Kind.DECISION

    archive = tmp_path / "memories_export_ana.zip"
    memories = [
        {"id": "m-1", "content": "Prefers tabs.", "state": "active"},
        {"id": "m-3", "content": "Old laptop.", "state": "archived"},
        {"id": "m-4", "content": "Gone.", "state": "deleted"},
    ]
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("memories.json", json.dumps({"memories": memories}))
    out = run("import_memory", "acme", "platform", str(archive))
    assert "Imported 1 items" in out
    assert "unchanged 1" in out
    assert Fact.objects.get(project=platform, origin="m-3").state == State.RETRACTED
    assert not Fact.objects.filter(project=platform, origin="m-4").exists()


def test_the_format_can_be_forced_and_a_wrong_one_is_named(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just text\n")
    with pytest.raises(CommandError, match="line 1: not valid JSON"):
        run("import_memory", "acme", "platform", str(path), "--format", "mcp-memory")
    with pytest.raises(CommandError, match="basic-memory import takes a folder"):
        run("import_memory", "acme", "platform", str(path), "--format", "basic-memory")
    for fmt in ("jsonl", "markdown", "mcp-memory", "mem0"):
        with pytest.raises(CommandError, match=f"A {fmt} import takes a file"):
            run("import_memory", "acme", "platform", str(tmp_path), "--format", fmt)
    (tmp_path / "latin1.jsonl").write_bytes(b'{"text": "caf\xe9"}\n')
    with pytest.raises(CommandError, match="not UTF-8"):
        run("import_memory", "acme", "platform", str(tmp_path / "latin1.jsonl"))
    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    with pytest.raises(CommandError, match="not a readable zip"):
        run("import_memory", "acme", "platform", str(tmp_path / "broken.zip"))


@pytest.mark.django_db(transaction=True)
def test_imported_items_are_served_with_their_origin(tenant: Tenant, tmp_path: Path, mcp_client: Any) -> None:
    path = write_jsonl(
        tmp_path / "items.jsonl", [{"id": "note-12", "kind": "decision", "text": "Webhooks retry thrice."}]
    )
    run("import_memory", "acme", "platform", str(path))
    token, _ = tenant.issue()
    client = mcp_client(token)
    found = client.ok("search_memory", {"project_id": "platform", "query": "webhooks retry"})["results"]
    assert [r["provenance"]["origin"] for r in found] == ["note-12"]
    bundle = client.ok("get_context", {"project_id": "platform", "task": "webhooks retry"})
    assert [item["provenance"]["origin"] for item in bundle["facts"]] == ["note-12"]


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_long_imports_and_exports_draw_a_progress_bar_on_a_terminal_only(
    tenant: Tenant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_jsonl(tmp_path / "items.jsonl", [{"text": f"Item {i}."} for i in range(3)])
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    run("import_memory", "acme", "platform", str(path))
    run("export_workspace", "acme", str(tmp_path / "out.zip"))
    drawn = terminal.getvalue()
    assert "importing [############################]          3 / 3 items" in drawn
    assert "exporting [############################]          3 / 3 items" in drawn
    piped = StringIO()
    monkeypatch.setattr("sys.stderr", piped)
    run("import_memory", "acme", "platform", str(path))
    assert piped.getvalue() == ""


@pytest.mark.parametrize("held_before", [False, True], ids=["new project", "project with items"])
def test_an_item_repeating_one_of_an_earlier_batch_is_matched_in_any_project(
    tenant: Tenant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_before: bool
) -> None:
    # A new project is looked up only for what the import itself inserted: the answer is the same.
    monkeypatch.setattr("memory.imports.BATCH_SIZE", 2)
    platform = tenant.projects["platform"]
    if held_before:
        fact_create(project=platform, kind=Kind.FACT, text="Held before the import.", actor="owner")
    path = write_jsonl(
        tmp_path / "items.jsonl",
        [
            {"id": "queues", "text": "Queues deduplicate by message id."},
            {"text": "Deploys go out on Tuesdays."},
            {"text": "Queues deduplicate by message id."},  # the first item's text, without its id
            {"text": "Deploys go out on Tuesdays."},
            {"id": "queues", "text": "Queues deduplicate by message id and by key."},
        ],
    )
    out = run("import_memory", "acme", "platform", str(path))
    assert "Imported 2 items into acme/platform (unchanged 3, updated 0; jsonl)" in out
    texts = Fact.objects.filter(project=platform).values_list("text", flat=True)
    assert sorted(texts) == sorted(
        [
            "Queues deduplicate by message id.",
            "Deploys go out on Tuesdays.",
            *(["Held before the import."] if held_before else []),
        ]
    )


def test_an_import_runs_unforgetters_configuration_checks(tenant: Tenant, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "items.jsonl", [{"text": "Deploys go out on Tuesdays."}])
    with (
        override_settings(PUBLIC_URL="http://127.0.0.1:8000/memory"),
        pytest.raises(SystemCheckError) as caught,
    ):
        call_command("import_memory", "acme", "platform", str(path), skip_checks=False, stdout=StringIO())
    assert "unforgetter.E001" in str(caught.value)
    assert not Fact.objects.filter(project=tenant.projects["platform"]).exists()


def test_bulk_insert_names_the_column_types_postgresql_stores() -> None:
    """A binary COPY sends each value in its column's type: the list must follow the table."""
    if connection.vendor != "postgresql":
        pytest.skip("binary COPY is PostgreSQL's")
    aliases = {"character varying": "varchar", "timestamp with time zone": "timestamptz"}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'memory_fact'"
        )
        stored = {name: aliases.get(kind, kind) for name, kind in cursor.fetchall()}
    assert [stored[column] for column in _ROW_COLUMNS] == list(_ROW_TYPES)


def test_bulk_inserted_rows_read_back_as_written(tenant: Tenant, tmp_path: Path) -> None:
    """Every column an import writes in bulk comes back as the file gave it (dates, taint, origin)."""
    path = write_jsonl(
        tmp_path / "items.jsonl",
        [
            {"kind": "fact", "text": "Tabs\tand \\ back\\slashes\nand lines", "date": "2026-03-04"},
            {
                "kind": "thread",
                "text": "Open question",
                "state": "closed",
                "id": "ext-7",
                "taint": "untrusted",
            },
            {"kind": "decision", "text": "Ünïcode ✓ text", "data_class": "confidential", "actor": "ana"},
        ],
    )
    project = tenant.projects["platform"]
    run("import_memory", "acme", "platform", str(path))
    rows = sorted(
        Fact.objects.filter(project=project).values_list(
            "kind", "text", "state", "data_class", "source_date", "actor", "taint", "origin", "workspace_id"
        )
    )
    ws = tenant.workspace.pk
    assert [(k, t, s, d, str(sd) if sd else None, a, tt, o, w) for k, t, s, d, sd, a, tt, o, w in rows] == [
        ("decision", "Ünïcode ✓ text", "active", "confidential", None, "ana", Taint.CLEAN, "", ws),
        (
            "fact",
            "Tabs\tand \\ back\\slashes\nand lines",
            "active",
            project.data_class,
            "2026-03-04",
            "import",
            Taint.CLEAN,
            "",
            ws,
        ),
        (
            "thread",
            "Open question",
            "closed",
            project.data_class,
            None,
            "import",
            Taint.UNTRUSTED,
            "ext-7",
            ws,
        ),
    ]


def test_looking_items_up_by_origin_uses_the_index_of_rows_that_have_one(
    tenant: Tenant, tmp_path: Path
) -> None:
    """fact_project_origin leaves out the rows without an origin (most of a project's): the lookup
    of a later import still finds its candidates through it."""
    without = [{"text": f"Note {n} on deploys."} for n in range(300)]
    path = write_jsonl(tmp_path / "items.jsonl", [*without, {"id": "ext-1", "text": "Deploys on Tuesdays."}])
    run("import_memory", "acme", "platform", str(path))  # the project holds items: a lookup follows
    with CaptureQueriesContext(connection) as queries:
        run("import_memory", "acme", "platform", str(path))
    [lookup] = [q["sql"] for q in queries if '"memory_fact"."origin" IN' in q["sql"]]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Planned for the table as it is (an import's ANALYZE waits for a commit that a test
            # never makes), and a few pages are read faster whole than through any index.
            cursor.execute("ANALYZE memory_fact")
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {lookup}")
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {lookup}")
        plan = " ".join(str(column) for row in cursor.fetchall() for column in row)
    assert "fact_project_origin" in plan


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL plans from statistics")
@pytest.mark.django_db(transaction=True)
def test_an_import_leaves_the_planner_statistics_of_the_table_as_it_now_is(tmp_path: Path) -> None:
    make_tenant("acme")
    lines = [{"kind": "fact", "text": f"Service {i} pages the platform on-call."} for i in range(400)]
    run("import_memory", "acme", "platform", str(write_jsonl(tmp_path / "items.jsonl", lines)))
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'memory_fact'")
        (rows,) = cursor.fetchone()
        cursor.execute(
            "SELECT n_distinct FROM pg_stats WHERE tablename = 'memory_fact' AND attname = 'text_digest'"
        )
        (distinct,) = cursor.fetchone()
    assert rows == Fact.objects.count() == 400  # committed, analyzed: not the empty table's picture
    assert distinct == -1  # every digest unique, as sampled
