"""Injection: channel forgery, i.e. chat-template / role markup and fake tool calls.

Flagged wherever it appears, because markup that opens a system, user or assistant turn or calls a
tool means the same to a model whether or not the author meant it (see ``docs/detectors.md``).
"""

from __future__ import annotations

import re
from typing import Final

from memory.detectors.normalisation import Gated, View, word_set

# All of these start with a literal character, so the regex engine skips ahead quickly.
_ANGLE_TOOL_RE: Final = re.compile(
    r"<(?:\|(?:tool|tool_call|tool_calls|tool_response|tool_result|python_tag|function|function_call"
    r"|plugin)\|>"
    r"|/?(?:[a-z]{1,12}:)?(?:tool_call|tool_calls|tool_use|tool_result|tool_response|function_calls?"
    r"|function_results?|tool)\s*>"
    r"|(?:[a-z]{1,12}:)?invoke\b|[a-z]{1,12}:parameter\s+name\s*=|function=[\w.-]{1,64}>)"
)
_JSON_TOOL_RE: Final = re.compile(
    r'"(?:(?:tool|tool_name|function|recipient_name)"\s*:\s*"[^"\n]{1,100}"\s*,\s*'
    r'"(?:arguments|args|parameters|params|input|tool_input)"\s*:'
    r'|name"\s*:\s*"[^"\n]{1,100}"\s*,\s*"(?:arguments|tool_input)"\s*:'
    r'|(?:function_call|tool_calls|tool_call|tool_use)"\s*:\s*[\[{"]'
    r'|type"\s*:\s*"(?:tool_use|function_call)"'
    r'|action"\s*:\s*"[^"\n]{1,100}"\s*,\s*"action_input"\s*:)'
)
# ReAct-style agent transcripts: "Action: <tool>" followed by "Action Input: ..." on the next line.
_REACT_RE: Final = re.compile(r"\naction\s*:\s*[\w.:-]{1,64}\s*\n\s*action\s+input\s*:")
# "call the tool X with", "invoke the delete_all tool with ...": the tool needs a tool-like name
# (snake_case, dotted or quoted) or the call needs an argument list, so "execute the migration tool
# with care" is not a tool call.
_TOOL_NAME: Final = r"(?:[`'\"][\w.:-]{1,64}[`'\"]|[a-z0-9]{1,30}[_.:][\w.:-]{1,60})"
_TOOL_ARGS: Final = (
    r"(?:with|using)\s+(?:the\s+)?(?:arguments?|args|parameters?|params|input|payload|\{|\w{1,30}\s*=)"
)
_NL_TOOL: Final = Gated(
    re.compile(
        rf"\b(?:call|invoke|execute|trigger|run)\s+(?:the\s+)?(?:tool|function\s+tool)\s+{_TOOL_NAME}\s+(?:with|using)\b"
        rf"|\b(?:call|invoke|execute|trigger|run)\s+(?:the\s+)?(?:tool|function\s+tool)\s+[\w.:-]{{1,64}}\s+{_TOOL_ARGS}"
        rf"|\b(?:call|invoke|execute|trigger|run)\s+(?:the\s+)?{_TOOL_NAME}\s+tool\s+(?:with|using)\b"
        rf"|\b(?:call|invoke|execute|trigger|run)\s+(?:the\s+)?[\w.:-]{{1,64}}\s+tool\s+{_TOOL_ARGS}"
    ),
    (word_set("tool"), word_set("call invoke execute trigger run")),
)

_ANGLE_ROLE_RE: Final = re.compile(
    r"<(?:\|[a-z][a-z0-9_▁.\-]{1,38}\|>"
    r"|\|?(?:start_of_turn|end_of_turn)\|?>"
    r"|</?sys>>"
    r"|/?(?:system|system[_-]?(?:prompt|message|instructions?)|sys|im_start|im_end)\s*>)"
)
_BRACKET_ROLE_RE: Final = re.compile(
    r"\[(?:/?(?:inst|system_prompt|sys_prompt)\]|(?:system|assistant)\]\s*\(#)"
)
_ROLE_DIRECTIVE: Final = (
    r"(?:you\b|you're|ignore|disregard|forget|act\b|from\s+now|always\b|never\b|do\s+not\b|don't\b"
    r"|your\b|pretend|respond|reply|answer|as\s+an?\b|the\s+assistant|new\s+rules?|override)"
)
# Matched against "\n" + text, so that the start of the text counts as a line start.
_LINE_ROLE_RE: Final = re.compile(
    r"\n[ \t>*_#-]{0,6}(?:#{1,6}\s*(?:system|instruction|assistant|human|response)\s*:"
    r"|(?:human|assistant)\s*:"
    rf"|(?:system|system\s+prompt|system\s+message|sys)\s*[:=]\s*[\"'“]?\s*{_ROLE_DIRECTIVE})"
)
_LINE_ROLE_GATE: Final = word_set("system sys human assistant instruction")
_SYSTEM_ASSIGN: Final = Gated(
    re.compile(
        r"\b(?:new|updated|real|actual|true|override|revised|secret|hidden)\s+system\s+"
        r"(?:prompt|message|instructions?)\s*[:=]"
    ),
    (word_set("system"), word_set("new updated real actual true override revised secret hidden")),
)
_EOS_RE: Final = re.compile(r"</s>")
_EOS_FOLLOWUP_RE: Final = re.compile(r"\s*(?:<s>|\[inst\]|<\||\n?(?:human|user|assistant|system)\s*:)")


def _has_eos_token(text: str) -> bool:
    """``</s>`` as a chat-template end-of-sequence token (not an HTML strike-through close tag)."""
    for match in _EOS_RE.finditer(text):
        if _EOS_FOLLOWUP_RE.match(text, match.end()) or "<s>" not in text[: match.start()]:
            return True
    return False


def find_tool_call(view: View) -> bool:
    """Whether the text contains tool-call syntax: XML-style tags, tool-call JSON, ReAct or prose."""
    text = view.text
    if "<" in text and _ANGLE_TOOL_RE.search(text):
        return True
    if '"' in text and _JSON_TOOL_RE.search(text):
        return True
    if "input" in view.words and "action" in view.words and _REACT_RE.search("\n" + text):
        return True
    return _NL_TOOL.search(view) is not None


def find_role_markup(view: View) -> bool:
    """Whether the text forges a turn: chat-template tokens, role tags or line-start role labels."""
    text = view.text
    if "<" in text and (_ANGLE_ROLE_RE.search(text) or ("</s>" in text and _has_eos_token(text))):
        return True
    if "[" in text and _BRACKET_ROLE_RE.search(text):
        return True
    words = view.words
    if (":" in text or "=" in text) and (
        not _LINE_ROLE_GATE.isdisjoint(words) or ("response" in words and "#" in text)
    ):
        if _LINE_ROLE_RE.search("\n" + text):
            return True
        if _SYSTEM_ASSIGN.search(view):
            return True
    return False
