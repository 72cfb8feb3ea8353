"""Building the MCP server leaves logging to Django (mcpbridge.server._logging_left_to_django)."""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpbridge.server import build_server

_BUILDS = """
import sys
import django
django.setup()
from mcpbridge.server import build_server
build_server()
print(sorted(name for name in sys.modules if name == "rich" or name.startswith("rich.")))
"""


def test_building_the_server_keeps_the_root_loggers_handlers_and_level() -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    build_server()
    assert root.handlers == handlers
    assert root.level == level


@pytest.mark.skipif(importlib.util.find_spec("rich") is None, reason="only where rich is installed")
def test_building_the_server_does_not_import_rich() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _BUILDS],
        env=os.environ | {"DJANGO_SETTINGS_MODULE": "unforgetter.settings"},
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
