"""CLAUDE.md / AGENTS.md-style notes: each bullet or paragraph is one item, its kind taken from
the heading above it (Decisions, Conventions, Policies, Open questions, ...). A section of
commands or steps (Commands, Build and test, How to deploy, ...) stays whole as one method.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TextIO

from memory.models import Kind
from memory.readers.base import Incoming

_HEADING_KINDS = [
    # Commands first: "Build and test commands" is a method, not a convention.
    (re.compile(r"command|build|setup|set-up|install|scripts|workflow|running|how to", re.I), Kind.METHOD),
    (re.compile(r"decision|adr|chose|choice", re.I), Kind.DECISION),
    (re.compile(r"convention|style|standard|guideline|rule of thumb", re.I), Kind.CONVENTION),
    (re.compile(r"polic|must|never|security|compliance|rule", re.I), Kind.POLICY),
    (re.compile(r"goal|objective|mission", re.I), Kind.GOAL),
    (re.compile(r"permission|access", re.I), Kind.PERMISSION),
    (re.compile(r"identity|who we are|about", re.I), Kind.IDENTITY),
    (re.compile(r"open|question|todo|thread|follow", re.I), Kind.THREAD),
    (re.compile(r"method|runbook|procedure|steps|playbook", re.I), Kind.METHOD),
]
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def kind_for_heading(heading: str) -> Kind:
    """The kind a heading (or a category name) announces; plain facts when it names none."""
    for pattern, kind in _HEADING_KINDS:
        if pattern.search(heading):
            return kind
    return Kind.FACT


def markdown_items(stream: TextIO, *, name: str) -> Iterator[Incoming]:
    """Bullets and paragraphs of CLAUDE.md/AGENTS.md-style notes; methods keep their whole section."""
    kind: Kind = Kind.FACT
    heading = ""
    block: list[str] = []
    method_lines: list[str] = []
    number = 0

    def flush_block() -> Iterator[Incoming]:
        text = " ".join(line.strip() for line in block).strip()
        block.clear()
        if text:
            yield Incoming(where=f"line {number}", kind=kind, text=text, source=name)

    def flush_method() -> Iterator[Incoming]:
        text = "\n".join(method_lines).strip()
        method_lines.clear()
        if text:
            yield Incoming(where=f"line {number}", kind=Kind.METHOD, text=f"{heading}\n{text}", source=name)

    in_code = False
    for number, raw in enumerate(stream, start=1):  # noqa: B007 (read by the flushes)
        line = raw.rstrip("\n")
        if line.strip().startswith("```"):
            in_code = not in_code
        heading_match = None if in_code else _HEADING_RE.match(line)
        if heading_match:
            yield from flush_block()
            yield from flush_method()
            heading = heading_match.group(2)
            kind = kind_for_heading(heading)
            continue
        if kind == Kind.METHOD:
            method_lines.append(line)
            continue
        bullet = None if in_code else _BULLET_RE.match(line)
        if bullet:
            yield from flush_block()
            block.append(bullet.group(1))
        elif not line.strip():
            yield from flush_block()
        else:
            block.append(line)
    yield from flush_block()
    yield from flush_method()
