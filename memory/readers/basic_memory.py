"""A basic-memory folder: Markdown notes with a front matter (`title`, `type`, `permalink`, ...).

Each note becomes one item: its title and body, its kind from the note's `type` when that names
one (a `decision` note is a decision), identified by its permalink (or its path), so an edited
note supersedes the earlier import instead of adding a second copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from memory.readers.base import Incoming, bad, foreign_id, iso_date
from memory.readers.markdown import kind_for_heading


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """The `key: value` lines between leading `---` fences, and the body after them."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            meta = {}
            for entry in lines[1:end]:
                key, sep, value = entry.partition(":")
                if sep and not entry.startswith((" ", "-")):
                    meta[key.strip()] = value.strip().strip("'\"")
            return meta, "\n".join(lines[end + 1 :])
    return {}, text


def basic_memory_items(folder: Path) -> Iterator[Incoming]:
    for path in sorted(folder.rglob("*.md")):
        relative = path.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        try:
            meta, body = _front_matter(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise bad(relative, "not UTF-8 text.") from None
        title = meta.get("title") or path.stem
        body = body.strip()
        if body.startswith("# "):
            first, _, rest = body.partition("\n")
            title, body = first[2:].strip() or title, rest.strip()
        yield Incoming(
            where=relative,
            kind=kind_for_heading(meta.get("type", "")),
            text=f"{title}\n{body}".strip(),
            source=relative,
            source_date=iso_date(meta.get("date") or meta.get("created"), relative),
            origin=foreign_id(
                meta.get("permalink") or relative.removesuffix(".md"), relative, field="permalink"
            ),
        )
