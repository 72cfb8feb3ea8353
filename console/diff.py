"""An inline word diff of a current item and a proposed text, rendered inert."""

from __future__ import annotations

import difflib
import re

from django.utils.safestring import SafeString, mark_safe

from console.templatetags.inert import inert_html

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
# Beyond this many tokens a side, the diff is shown as removed-then-added blocks (difflib is
# quadratic in the worst case and a reviewer cannot read a word diff that long anyway).
MAX_TOKENS = 4000


def word_diff(old: str, new: str) -> SafeString:
    """`old` -> `new` as HTML: unchanged text plain, removals in <del>, additions in <ins>."""
    a = _TOKEN.findall(old)
    b = _TOKEN.findall(new)
    if len(a) > MAX_TOKENS or len(b) > MAX_TOKENS:
        return mark_safe(f"<del>{inert_html(old)}</del><ins>{inert_html(new)}</ins>")  # noqa: S308
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    parts: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(str(inert_html("".join(a[i1:i2]))))
            continue
        if op in ("delete", "replace"):
            parts.append(f"<del>{inert_html(''.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            parts.append(f"<ins>{inert_html(''.join(b[j1:j2]))}</ins>")
    return mark_safe("".join(parts))  # noqa: S308 - every piece went through inert_html
