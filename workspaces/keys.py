"""The install's own keys: SECRET_KEY and LEDGER_KEY, generated once and kept beside the database.

The embedded default (SQLite, one machine) needs no set-up step, yet no two installs may share a
key: the first process to start writes a key file of random keys (mode 0600, created atomically,
so two processes starting together agree on one file) and every later start reads it. A fleet
(PostgreSQL) takes its keys from the environment instead, like Vault's seal key or GitLab's
secrets file: every process must hold the same ones. The two keys are independent, so rotating
SECRET_KEY (sessions, cursors) never breaks the ledger's attestations.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import tempfile
from pathlib import Path

KEY_NAMES = ("SECRET_KEY", "LEDGER_KEY")
MIN_KEY_LENGTH = 50
MIN_UNIQUE_CHARACTERS = 5
# SHA-256 digests of keys that are public (in this repository's history or in documentation);
# a key is matched by digest so the values themselves are not repeated here.
KNOWN_KEY_DIGESTS = frozenset(
    {
        # the embedded default's fixed key before per-install keys
        "29bc00593c603b8b4fcaa01b8732d06acf4bc1ec6142608cdf9517834f4440d0",
        # docs/oauth.md's example key before per-install keys
        "60f510b681c5e3592af7b74577fd2e1289a79dedf49c4728b40416a82deefd22",
    }
)
_INSECURE_PREFIX = "django-insecure"


def key_digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def key_weakness(value: str) -> str | None:
    """Why a key must not be used (public, short or repetitive), or None when it is acceptable.

    The length and variety rules are Django's own for SECRET_KEY (security.W009).
    """
    if not value:
        return "it is empty"
    if key_digest(value) in KNOWN_KEY_DIGESTS or value.startswith(_INSECURE_PREFIX):
        return "it is publicly known"
    if len(value) < MIN_KEY_LENGTH or len(set(value)) < MIN_UNIQUE_CHARACTERS:
        return f"it is weak (use at least {MIN_KEY_LENGTH} random characters)"
    return None


def new_key() -> str:
    return secrets.token_urlsafe(48)


def _parse(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() in KEY_NAMES:
            values[name.strip()] = value.strip()
    return values


def install_keys(path: Path) -> dict[str, str]:
    """The keys stored at `path`, creating the file (0600, random keys) if it does not exist.

    The file is written under a temporary name and linked into place, which fails if another
    process got there first: then that process's keys are read, so every process of an install
    holds the same keys and a half-written file is never read.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"{name}={new_key()}\n" for name in KEY_NAMES)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".keys-")  # mode 0600
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(
                    "# This install's own keys (generated on first run). Keep this file private and\n"
                    "# backed up with the database: without LEDGER_KEY the ledger cannot be verified.\n"
                    + body
                )
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    values = _parse(path.read_text())
    missing = [name for name in KEY_NAMES if not values.get(name)]
    if missing:
        raise ValueError(f"The key file {path} has no {', '.join(missing)}.")
    return values
