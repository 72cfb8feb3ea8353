"""Secrets are not kept in clear: a text holding one is stored with every secret replaced.

`propose_memory` redacts the change text and every evidence ref and text before the proposal is
attested and stored, so the ledger attests what is stored, and the database, the console, the
admin, exports and logs never hold the value. The consolidator then rejects the proposal for a
secret (`redacted_label`). Besides the secrets the detector names (`secret_spans`), any long
random-looking token beside one goes too: the second half of an access-key pair has no prefix.
"""

from __future__ import annotations

import re
from typing import Final

from memory.detectors import secret_spans

MARK_OPEN: Final = "⟦redacted secret: "
MARK_CLOSE: Final = "⟧"
_MARK_RE: Final = re.compile(rf"{re.escape(MARK_OPEN)}([a-z_]{{1,40}}){re.escape(MARK_CLOSE)}")
_TOKEN_RE: Final = re.compile(r"(?<![\w/+=-])[A-Za-z0-9_+/=-]{16,1024}(?![\w/+=-])")


def _random_looking(value: str) -> bool:
    classes = sum(
        (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))
    )
    return classes >= 2 and any(c.isdigit() for c in value) and not value.isdigit()


def redact(text: str) -> str:
    """`text` with each secret replaced by a mark naming its kind; unchanged if it holds none."""
    spans = [(start, end, signal.label) for start, end, signal in secret_spans(text)]
    if not spans:
        return text
    spans.extend(
        (m.start(), m.end(), "token") for m in _TOKEN_RE.finditer(text) if _random_looking(m.group())
    )
    out: list[str] = []
    cursor = 0
    for start, end, label in sorted(spans):
        if start < cursor:  # overlaps the previous one: widen it
            continue
        out.append(text[cursor:start])
        out.append(f"{MARK_OPEN}{label}{MARK_CLOSE}")
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def redacted_label(text: str) -> str | None:
    """The kind of the first secret redacted from `text`, or None."""
    match = _MARK_RE.search(text)
    return match.group(1) if match else None


def redacted_span(text: str) -> tuple[int, int] | None:
    """Where the first redaction mark is in `text`, or None."""
    match = _MARK_RE.search(text)
    return match.span() if match else None
