"""Personal bearer tokens: `unf_` + 43 urlsafe characters (32 random bytes). Only digests are stored."""

from __future__ import annotations

import hashlib
import re
import secrets

PREFIX = "unf_"
_TOKEN_RE = re.compile(r"^unf_[A-Za-z0-9_-]{43,128}$")


def generate() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def looks_like_personal_token(raw: str) -> bool:
    """Cheap shape check so malformed input never reaches the database."""
    return bool(_TOKEN_RE.match(raw))


def hint(raw: str) -> str:
    """What the console may show of a token after it was issued: the prefix and last four characters."""
    return f"{PREFIX}…{raw[-4:]}"
