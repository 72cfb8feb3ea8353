"""The context compiler: a bounded bundle of what an agent needs for one task in one project.

`compile` builds the sections (the task-independent part kept per content version by
`standing`); `serve` caches them per publication, records them for audit and adds freshness and
identity.
"""

from memory.context.compile import compile_bundle, standing_parts_clear
from memory.context.markdown import bundle_markdown
from memory.context.serve import context_at, context_for_agent, context_named
from memory.items import item_payload

__all__ = [
    "bundle_markdown",
    "compile_bundle",
    "context_at",
    "context_for_agent",
    "context_named",
    "item_payload",
    "standing_parts_clear",
]
