"""What a ref is: the stable, random name of one item version or one proposal.

A ref is a lowercase prefix (the item's kind, or `prop` for a proposal), an underscore and a
random tail: `decision_x7k2m9q4r8s3t5`. Refs are unguessable, so counts and ids of other tenants
never show through them. Everything that asks "is this one of our refs?" asks here.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote

# 32 letters and digits that cannot be misread for one another (no l, o, 0, 1).
ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
TAIL_LENGTH = 14
PROPOSAL_PREFIX = "prop"
# Refs we make have a 14-character tail; imported items may bring shorter or longer ones.
REF_PATTERN = r"[a-z]{2,16}_[a-z0-9]{6,40}"
MAX_REF_LENGTH = 64
REF_RE = re.compile(rf"^{REF_PATTERN}$")
# A ref mentioned inside other text (evidence, a change's text): a citation for taint.
REF_MENTION_RE = re.compile(rf"(?<![A-Za-z0-9_])({REF_PATTERN})(?![A-Za-z0-9_])")


# Each random byte spells one character from its low 5 bits: 256 is a multiple of 32, so every
# character of the alphabet is equally likely and a tail holds 5 random bits per character.
_FROM_BYTE = bytes(ALPHABET.encode()[byte % len(ALPHABET)] for byte in range(256))


def new_ref(prefix: str) -> str:
    """A random, unguessable reference: counts and ids of other tenants never show through it."""
    return prefix + "_" + ref_tails(1)[0]


def ref_tails(count: int) -> list[str]:
    """`count` random ref tails: 14 characters of the 32-letter alphabet, 70 random bits each.

    All from one read of the CSPRNG, spelled in one pass: a bulk import makes 100,000 refs, and
    a read and a per-character loop each, per ref, were a tenth of its Python time. The pass is
    one `bytes.translate` (base32, which packs the bits tighter, is a Python loop before 3.13:
    0.15 s per 100,000 refs, on the thread an import writes from).
    """
    characters = count * TAIL_LENGTH
    spelled = secrets.token_bytes(characters).translate(_FROM_BYTE).decode()
    return [spelled[i : i + TAIL_LENGTH] for i in range(0, characters, TAIL_LENGTH)]


def new_proposal_ref() -> str:
    return new_ref(PROPOSAL_PREFIX)


def is_ref(value: str) -> bool:
    """Whether `value` has the form of one of our refs (it may still name nothing)."""
    return bool(REF_RE.match(value))


def refs_mentioned(text: str) -> list[str]:
    """Every ref-shaped word in `text`, in order."""
    return REF_MENTION_RE.findall(text)


_SPACING_RE = re.compile(r"[\s\u00ad\u200b-\u200f\u2060-\u2064\ufeff]+")


def refs_cited(text: str, prefixes: Iterable[str]) -> list[str]:
    """Every ref `text` names in any case, spacing or URL form (`FACT_X...`, `fact_ x...`,
    `https://host/items/fact_x.../`, `fact%5Fx...`), in order; `prefixes` are the ref prefixes
    that may be glued to other words once spacing is removed."""
    folded = unquote(unicodedata.normalize("NFKC", text)).casefold()
    found = refs_mentioned(folded)
    squeezed = _SPACING_RE.sub("", folded)
    if squeezed != folded:
        glued = re.compile(rf"(?:{'|'.join(map(re.escape, prefixes))})_[a-z0-9]{{6,40}}")
        for match in glued.finditer(squeezed):
            ref = match.group()
            prefix, tail = ref.split("_", 1)
            found.extend([ref, f"{prefix}_{tail[:TAIL_LENGTH]}"] if len(tail) > TAIL_LENGTH else [ref])
    return list(dict.fromkeys(found))
