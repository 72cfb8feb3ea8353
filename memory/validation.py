"""The rules a proposed change must satisfy, shared by propose_memory and the consolidator.

`change_check` is the schema of a change (which op takes which fields) and refuses anything that
names a protected kind; `proposal_findings` looks for concrete injection and secret signals in
everything a proposal would put in front of another agent or a reviewer, and for the risk signals
that hold it for review. Both are pure: no database access, so the consolidator can run them over
a whole batch cheaply.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memory.detectors import Signal, assess, attack_span, excerpt, find_attack, normalise, secret_spans
from memory.detectors.signal import KIND_SECRET
from memory.evidence import FORGED, ref_hazard
from memory.exceptions import ProtectedTarget
from memory.models import Kind, Proposal
from memory.redaction import redacted_label, redacted_span
from memory.refs import is_ref, refs_cited
from memory.rules import AGENT_KINDS, MAX_CITATIONS, MAX_TEXT, RETRACTABLE_KINDS, UPDATABLE_KINDS
from workspaces.exceptions import InvalidRequest

# Every spelling of the protected kinds an agent might use to name one: singular, plural, short.
_PROTECTED_WORDS = frozenset(
    {
        "goal",
        "goals",
        "policy",
        "policies",
        "permission",
        "permissions",
        "perm",
        "perms",
        "identity",
        "identities",
    }
)
_REF_PREFIXES = tuple(Kind.values)
_LEADING_WORD_RE = re.compile(r"[a-z]+")
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]{0,30}:/{0,2}")


@functools.lru_cache(maxsize=1024)
def names_protected_kind(value: str) -> bool:
    """Whether a target, ref or kind names a goal, policy, permission or identity, however spelled.

    The value is normalised as the injection detector reads text (NFKC, invisible characters
    removed, casefolded, look-alike letters and letter-spacing undone) and a leading `scheme:`
    (e.g. `unforgetter:`) is ignored; then its first word decides. Remembered: the consolidator
    asks it of every proposal's kind, and there are few kinds.
    """
    # normalise() also joins letter-spaced words ("p o l i c y") and undoes leetspeak ("p0licy").
    folded = normalise(value).strip()
    # "policy_x", "policy-x", "policies/x", "Policy: x": only the leading word counts.
    for candidate in (folded, _SCHEME_RE.sub("", folded)):
        match = _LEADING_WORD_RE.match(candidate)
        if match and match.group() in _PROTECTED_WORDS:
            return True
    return False


@dataclass(frozen=True)
class CheckedChange:
    """A change that passed the schema: `base` is the version an update or retraction is based on."""

    op: str
    kind: str
    text: str
    target: str
    base: str


def change_check(
    *, op: str, text: str, target: str | None = None, supersedes: str | None = None, kind: str | None = None
) -> CheckedChange:
    """Check a change's shape for its op; raise ProtectedTarget or InvalidRequest.

    Protected names are refused first, whatever else is wrong, so an agent aiming at a policy
    always learns that it may not, rather than how to spell the attempt correctly.
    """
    target = (target or "").strip()
    supersedes = (supersedes or "").strip()
    kind = (kind or "").strip()
    for value in (target, supersedes, kind):
        if value and names_protected_kind(value):
            raise ProtectedTarget()
    if op not in Proposal.Op.values:
        raise InvalidRequest(f"change.op must be one of {', '.join(Proposal.Op.values)}.")
    if not text.strip():
        raise InvalidRequest("change.text must not be blank.")
    if len(text) > MAX_TEXT:
        raise InvalidRequest(f"change.text is longer than {MAX_TEXT} characters.")
    for name, value in (("target", target), ("supersedes", supersedes)):
        if value and not is_ref(value):
            raise InvalidRequest(f"change.{name} must be an item ref such as fact_x7k2m9q4r8s3t5.")
    if kind and op != Proposal.Op.ADD_FACT and op != Proposal.Op.UPDATE_FACT:
        raise InvalidRequest(f"change.kind is only for add_fact and update_fact, not {op}.")
    if kind and kind not in AGENT_KINDS:
        raise InvalidRequest(f"change.kind must be one of {', '.join(AGENT_KINDS)}.")

    if op in (Proposal.Op.ADD_FACT, Proposal.Op.OPEN_THREAD):
        if target or supersedes:
            raise InvalidRequest(f"{op} creates a new item: omit target and supersedes.")
        return CheckedChange(
            op=op, kind=Kind.THREAD if op == Proposal.Op.OPEN_THREAD else (kind or Kind.FACT), text=text,
            target="", base="",
        )  # fmt: skip
    if op == Proposal.Op.UPDATE_FACT:
        if target and supersedes and target != supersedes:
            raise InvalidRequest(
                "update_fact: target and supersedes both name the version you read and are replacing; "
                "give one, or the same ref in both."
            )
        base = supersedes or target
        if not base:
            raise InvalidRequest("update_fact needs target: the ref of the item you are replacing.")
        return CheckedChange(op=op, kind=kind, text=text, target=base, base=base)
    if supersedes:
        raise InvalidRequest(f"{op} takes target, not supersedes.")
    if not target:
        raise InvalidRequest(f"{op} needs target: the ref of the item it applies to.")
    return CheckedChange(op=op, kind="", text=text, target=target, base=target)


def target_kind_check(*, op: str, kind: str) -> None:
    """Whether an op may apply to an item of this kind; raise ProtectedTarget or InvalidRequest."""
    if kind in Kind.protected():
        raise ProtectedTarget()
    if op == Proposal.Op.UPDATE_FACT and kind not in UPDATABLE_KINDS:
        raise InvalidRequest(f"update_fact applies to facts, decisions and conventions, not a {kind}.")
    if op == Proposal.Op.CLOSE_THREAD and kind != Kind.THREAD:
        raise InvalidRequest(f"close_thread applies to threads, not a {kind}.")
    if op == Proposal.Op.REJECT and kind not in RETRACTABLE_KINDS:
        raise InvalidRequest(f"reject applies to facts, decisions, conventions and threads, not a {kind}.")


def content_digest(*, project_id: int, change: CheckedChange) -> str:
    """The identity of *what* is proposed (not why): a repeat of a rejected change matches it.

    Text is compared as a reader sees it: NFKC, casefolded, whitespace collapsed.
    """
    body = {
        "project": project_id,
        "op": change.op,
        "kind": change.kind,
        "base": change.base,
        "text": " ".join(normalise(change.text).split()),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def cited_refs(*, text: str, evidence: Sequence[Mapping[str, Any]], base: str) -> list[str]:
    """Every item ref the proposal cites: its base, evidence refs (also as `unforgetter:REF`) and
    refs mentioned in evidence or change text, in any case, spacing or URL form (`refs_cited`).
    Bounded, so a proposal cannot make lookups costly."""
    refs: list[str] = [base] if base else []
    for item in evidence:
        ref = str(item.get("ref") or "").strip()
        if ref:
            refs.append(ref.removeprefix("unforgetter:"))
            refs.extend(refs_cited(ref, _REF_PREFIXES))
        refs.extend(refs_cited(str(item.get("text") or ""), _REF_PREFIXES))
    refs.extend(refs_cited(text, _REF_PREFIXES))
    # Only what could be one of our refs is looked up ("logs/1.txt" or a URL cannot).
    return [r for r in dict.fromkeys(refs) if is_ref(r)][:MAX_CITATIONS]


def forged_evidence(evidence: Iterable[Mapping[str, Any]]) -> str | None:
    """Why the evidence is no provenance at all (a script or data URI, a cloud metadata address),
    or None. Such refs are never fetched; a proposal resting on one is rejected."""
    for index, item in enumerate(evidence):
        hazard = ref_hazard(str(item.get("ref") or ""))
        if hazard is not None and hazard[0] == FORGED:
            return f"evidence[{index}].ref is {hazard[1]}: no honest provenance has one."
    return None


def provenance_present(evidence: Iterable[Mapping[str, Any]]) -> bool:
    """At least one evidence item says, in more than whitespace, what the change rests on."""
    return any(str(item.get("ref") or "").strip() or str(item.get("text") or "").strip() for item in evidence)


@dataclass(frozen=True)
class Findings:
    """What the detectors found in a proposal: the attack that rejects it (where, signal), if any,
    and the risk signals that hold it for review, each as stored on the proposal."""

    attack: tuple[str, Signal] | None
    risks: list[dict[str, str | int]]
    # The attack's span in the field named by `where` (character offsets), and what is shown of it.
    span: tuple[int, int] = (0, 0)
    excerpt: str = ""

    def attack_dict(self) -> dict[str, str | int]:
        """The attack as stored on the rejected proposal, with its span; {} if there is none."""
        if self.attack is None:
            return {}
        where, signal = self.attack
        start, end = self.span
        return {
            "label": signal.label,
            "detail": signal.detail,
            "where": where,
            "kind": signal.kind,
            "excerpt": self.excerpt,
            "start": start,
            "end": end,
        }


def _located(where: str, signal: Signal, value: str, risks: list[dict[str, str | int]]) -> Findings:
    """The findings for an attack in `value`, with where it is. A secret's span is its redaction
    mark (or, if it was not redacted, only its kind is shown): never the value itself."""
    if signal.kind == KIND_SECRET:
        mark = redacted_span(value)
        if mark is not None:
            return Findings((where, signal), risks, mark, value[mark[0] : mark[1]])
        first = next(secret_spans(value), None)
        if first is not None:
            start, end, found = first
            return Findings((where, signal), risks, (start, end), f"[{found.label}]")
        return Findings((where, signal), risks)
    start, end = attack_span(value, lambda part: find_attack(part) is not None)
    return Findings((where, signal), risks, (start, end), excerpt(value, start, end))


def _redacted_secret(text: str) -> Signal | None:
    """The secret signal of a text whose secret was redacted when it was submitted."""
    label = redacted_label(text)
    if label is None:
        return None
    return Signal(KIND_SECRET, label, "Contained a secret, redacted before it was stored; rotate it.")


@functools.lru_cache(maxsize=4096)
def _evidence_attack(value: str) -> Signal | None:
    """`find_attack`, remembered: agents cite the same few refs ("notes/team-sync.md", a ticket)
    in proposal after proposal, and a batch should not scan each of them a thousand times."""
    return find_attack(value) or _redacted_secret(value)


def proposal_findings(*, text: str, evidence: Iterable[Mapping[str, Any]]) -> Findings:
    """Concrete attacks in the change text, then in each evidence ref and text; risk signals in the
    change text (what other agents will read).

    Evidence is scanned for attacks too: its refs become the published item's provenance source,
    and all of it is shown to reviewers.
    """
    assessment = assess(text)
    risks = [risk.as_dict("change.text") for risk in assessment.risks]
    attack = assessment.attack or _redacted_secret(text)
    if attack is not None:
        return _located("change.text", attack, text, risks)
    for index, item in enumerate(evidence):
        for field in ("ref", "text"):
            value = item.get(field)
            if value:
                found = _evidence_attack(str(value))
                if found is not None:
                    return _located(f"evidence[{index}].{field}", found, str(value), risks)
    return Findings(None, risks)
