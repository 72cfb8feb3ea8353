"""Per-install keys: generated on first run, never shared, refused when public or weak."""

from __future__ import annotations

import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from memory.ledger import ledger_verify
from memory.services import proposal_submit
from tests.conftest import Tenant
from tests.processes import ROOT, process_env
from workspaces.checks import check_keys
from workspaces.keys import install_keys, key_weakness, new_key
from workspaces.selectors import agent_scope

OLD_EMBEDDED_DEFAULT = "dev-only-insecure-secret-key-change-me-0123456789abcdef"


def test_first_run_writes_a_private_key_file_that_later_runs_reuse(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3.keys"
    first = install_keys(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first["SECRET_KEY"] != first["LEDGER_KEY"]
    assert key_weakness(first["SECRET_KEY"]) is None
    assert key_weakness(first["LEDGER_KEY"]) is None
    assert install_keys(path) == first
    assert install_keys(tmp_path / "other.keys") != first, "two installs never share a key"
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["db.sqlite3.keys", "other.keys"], "no temporary file is left behind"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (OLD_EMBEDDED_DEFAULT, "publicly known"),
        ("change-me-0123456789abcdef0123456789", "publicly known"),
        ("django-insecure-" + "x1y2z3" * 10, "publicly known"),
        ("short-but-random-Qx81", "weak"),
        ("a" * 64, "weak"),
        ("", "empty"),
    ],
)
def test_known_or_weak_keys_are_named(value: str, why: str) -> None:
    assert why in (key_weakness(value) or "")


def test_the_system_check_refuses_known_keys_outside_tests() -> None:
    ledger = {**settings.UNFORGETTER, "LEDGER_KEY": new_key()}
    with override_settings(TESTING=False, SECRET_KEY=OLD_EMBEDDED_DEFAULT, UNFORGETTER=ledger):
        errors = check_keys()
    assert [e.id for e in errors] == ["unforgetter.E003"]
    assert "SECRET_KEY" in errors[0].msg
    assert "publicly known" in errors[0].msg
    same = {**settings.UNFORGETTER, "LEDGER_KEY": settings.SECRET_KEY}
    with override_settings(TESTING=False, UNFORGETTER=same):
        assert [e.id for e in check_keys()] == ["unforgetter.E004"]
    with override_settings(TESTING=False):
        assert check_keys() == [], "this install's generated keys pass"


def _settings_process(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = process_env(**env)
    for name in ("SECRET_KEY", "LEDGER_KEY", "UNFORGETTER_TESTING", "DEBUG", "KEYS_FILE"):
        environment.pop(name, None)
    environment.update(env)
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check", "--fail-level", "ERROR"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_a_fresh_embedded_install_generates_its_keys_and_passes_its_checks(tmp_path: Path) -> None:
    database = tmp_path / "fresh.sqlite3"
    done = _settings_process(tmp_path, DATABASE_URL=f"sqlite:///{database}")
    assert done.returncode == 0, done.stderr
    keys = Path(f"{database}.keys")
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert OLD_EMBEDDED_DEFAULT not in keys.read_text()


@pytest.mark.slow
def test_postgresql_without_keys_in_the_environment_refuses_to_start(tmp_path: Path) -> None:
    done = _settings_process(tmp_path, DATABASE_URL="postgres://nobody@127.0.0.1:1/none")
    assert done.returncode != 0
    assert "SECRET_KEY and LEDGER_KEY must be set" in done.stderr
    assert "Traceback" not in done.stderr.split("ImproperlyConfigured")[-1]


@pytest.mark.django_db
def test_the_ledger_verifies_across_a_secret_key_rotation_and_a_ledger_key_rotation(tenant: Tenant) -> None:
    _, connection = tenant.issue()
    for i in range(3):
        proposal_submit(
            scope=agent_scope(connection),
            project_id="platform",
            request_id=f"k-{uuid.uuid4()}",
            op="add_fact",
            text=f"Rule {i}: every service owns its schema.",
            evidence=[{"ref": f"adr/{i}.md", "trust": "trusted"}],
        )
    workspace = tenant.workspace
    with override_settings(SECRET_KEY=new_key(), SECRET_KEY_FALLBACKS=[settings.SECRET_KEY]):
        assert ledger_verify(workspace=workspace).ok
    old = settings.UNFORGETTER["LEDGER_KEY"]
    rotated = {**settings.UNFORGETTER, "LEDGER_KEY": new_key(), "LEDGER_KEY_FALLBACKS": [old]}
    with override_settings(UNFORGETTER=rotated):
        assert ledger_verify(workspace=workspace).ok
    forgotten = {**settings.UNFORGETTER, "LEDGER_KEY": new_key(), "LEDGER_KEY_FALLBACKS": []}
    with override_settings(UNFORGETTER=forgotten):
        report = ledger_verify(workspace=workspace)
    assert not report.ok
    assert "edited" in report.problem
