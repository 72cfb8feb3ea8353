"""Prompt-injection detection: runs every injection rule family over one prepared text.

Each family lives in its own module (``injection_markup``, ``injection_override``, ``exfiltration``,
``hidden_unicode``); what each flags, and what it deliberately leaves alone, is described in
``docs/detectors.md``.
"""

from __future__ import annotations

from memory.detectors.exfiltration import find_exfiltration
from memory.detectors.hidden_unicode import find_hidden_unicode
from memory.detectors.injection_markup import find_role_markup, find_tool_call
from memory.detectors.injection_override import find_jailbreak, find_override
from memory.detectors.normalisation import View, prepare
from memory.detectors.signal import KIND_INJECTION, Signal


def find_injection(text: str, view: View | None = None) -> Signal | None:
    """Return the first prompt-injection signal in ``text``, or ``None``.

    Families are checked in this order: fake tool calls, role markup, instruction overrides,
    jailbreaks, exfiltration, hidden Unicode. ``view`` is ``prepare(text)`` if the caller has it.
    """
    view = view or prepare(text)
    if find_tool_call(view):
        return Signal(
            KIND_INJECTION, "tool_call_syntax", "Contains fake tool-call syntax aimed at the agent."
        )
    if find_role_markup(view):
        return Signal(
            KIND_INJECTION,
            "role_markup",
            "Contains chat-template or role markup that forges a system, user or assistant turn.",
        )
    if find_override(view):
        return Signal(
            KIND_INJECTION,
            "instruction_override",
            "Tries to override the agent's instructions or reassign its role.",
        )
    if find_jailbreak(view):
        return Signal(KIND_INJECTION, "instruction_override", "Contains a jailbreak persona or mode switch.")
    exfil = find_exfiltration(view)
    if exfil is not None:
        return Signal(KIND_INJECTION, "exfiltration", exfil)
    return find_hidden_unicode(text) if view.invisible else None
