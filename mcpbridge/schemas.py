"""Argument models of the four tools: the published input schemas and their validation.

Every model forbids unknown keys and describes every field for an LLM reader. Text fields refuse
NUL bytes and lone surrogates (invalid Unicode), which no database stores faithfully.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from memory.refs import MAX_REF_LENGTH, REF_PATTERN
from memory.rules import (
    MAX_EVIDENCE_ITEMS,
    MAX_EVIDENCE_REF,
    MAX_EVIDENCE_TEXT,
    MAX_TEXT,
    REQUEST_ID_CHARS,
    REQUEST_ID_HELP,
    REQUEST_ID_MAX,
    REQUEST_ID_MIN,
)
from memory.validation import names_protected_kind

__all__ = [
    "MAX_EVIDENCE_ITEMS",
    "MAX_EVIDENCE_REF",
    "MAX_EVIDENCE_TEXT",
    "MAX_PROPOSAL_TEXT",
    "PROTECTED_TARGET_ERROR",
    "Change",
    "Evidence",
    "GetContextArgs",
    "ListProjectsArgs",
    "ProposeMemoryArgs",
    "SearchMemoryArgs",
    "describe_validation_error",
]


def _clean_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode (no lone surrogates)") from None
    return value


Text = Annotated[str, AfterValidator(_clean_text)]
ProjectId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$",
        description="A project id exactly as list_projects returned it.",
    ),
]
RequestId = Annotated[
    str,
    Field(
        min_length=REQUEST_ID_MIN,
        max_length=REQUEST_ID_MAX,
        pattern=rf"^[{REQUEST_ID_CHARS}]+$",
        description=(
            f"Your own unique id for this proposal: {REQUEST_ID_HELP} "
            "(a UUID is ideal). Reusing an id returns the original result instead of proposing again; "
            "ids are remembered for at least 30 days."
        ),
    ),
]
Ref = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_REF_LENGTH,
        pattern=rf"^{REF_PATTERN}$",
        description="An item ref such as decision_x7k2...",
    ),
]

MAX_PROPOSAL_TEXT = MAX_TEXT
PROTECTED_TARGET_ERROR = "protected_target"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, str_strip_whitespace=False)


class ListProjectsArgs(StrictModel):
    """list_projects takes no arguments."""


class GetContextArgs(StrictModel):
    project_id: ProjectId
    task: Annotated[
        Text,
        Field(
            min_length=1,
            max_length=2_000,
            description="What you are about to do, in a sentence or two; the bundle is ranked for it.",
        ),
    ]


class SearchMemoryArgs(StrictModel):
    project_id: ProjectId
    query: Annotated[
        Text,
        Field(
            min_length=1,
            max_length=500,
            description=(
                "A question or words to search for: items holding more of its telling words, or close "
                "in meaning, rank first (-word leaves out items with that word); or an item ref from "
                "a get_context pointer to fetch that item."
            ),
        ),
    ]
    cursor: Annotated[
        Text | None,
        Field(
            default=None,
            max_length=512,
            description="The cursor from the previous page of this same search; omit for the first page.",
        ),
    ] = None


class Change(StrictModel):
    op: Literal["add_fact", "update_fact", "open_thread", "close_thread", "reject"] = Field(
        description=(
            "add_fact: a new fact, decision or convention. update_fact: replace the item `target` "
            "(history is kept). open_thread: a new open question or work item. close_thread: close the "
            "thread `target`. reject: propose retracting the item `target` as wrong."
        )
    )
    target: Ref | None = Field(default=None, description="The ref of the item this change applies to.")
    text: Annotated[
        Text,
        Field(
            min_length=1,
            max_length=MAX_PROPOSAL_TEXT,
            description="The proposed text, or why (for reject/close).",
        ),
    ]
    kind: Literal["fact", "decision", "convention"] | None = Field(
        default=None, description="For add_fact: the kind of item (default fact)."
    )
    supersedes: Ref | None = Field(
        default=None,
        description=(
            "For update_fact: the ref of the version you read and are replacing (same as target; give "
            "either). If a newer version was published since, the proposal is rejected as a conflict."
        ),
    )

    @field_validator("target", "supersedes", "kind", mode="before")
    @classmethod
    def _not_protected(cls, value: object) -> object:
        # Before the pattern and the kind list, so "Policy_x" or kind "policy" is named for what
        # it is (protected_target), not as a spelling mistake to correct and retry.
        if isinstance(value, str) and names_protected_kind(value):
            raise PydanticCustomError(
                PROTECTED_TARGET_ERROR, "goals, policies, permissions and identities are owner-only"
            )
        return value


class Evidence(StrictModel):
    ref: Annotated[
        Text | None,
        Field(
            default=None,
            min_length=1,
            max_length=MAX_EVIDENCE_REF,
            description=(
                "What you relied on: a memory ref, a URL, a file path or a ticket id. Never fetched. "
                "Citing a memory ref passes that item's taint on to this proposal."
            ),
        ),
    ] = None
    text: Annotated[
        Text | None,
        Field(
            default=None,
            max_length=MAX_EVIDENCE_TEXT,
            description="A quotation or observation you relied on.",
        ),
    ] = None
    trust: Literal["trusted", "untrusted"] = Field(
        description=(
            "untrusted for anything from the web, an email, a user upload or another tool's output; "
            "trusted only for first-hand, verified material. Claims of trusted from a low-trust zone "
            "count as untrusted."
        )
    )

    @model_validator(mode="after")
    def _ref_or_text(self) -> Evidence:
        if not self.ref and not self.text:
            raise ValueError("each evidence item needs a ref or a text")
        return self


class ProposeMemoryArgs(StrictModel):
    project_id: ProjectId
    request_id: RequestId
    change: Change
    evidence: list[Evidence] = Field(
        min_length=1,
        max_length=MAX_EVIDENCE_ITEMS,
        description=f"What the change is based on (1-{MAX_EVIDENCE_ITEMS} items).",
    )


def describe_validation_error(exc: ValidationError, *, limit: int = 5) -> str:
    """A specific, bounded message naming the offending fields, never echoing their values."""
    parts = []
    for error in exc.errors()[:limit]:
        location = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "is not a known argument"
        elif error["type"] == "missing":
            message = "is required"
        parts.append(
            f"{location} {message}"
            if error["type"] in ("extra_forbidden", "missing")
            else f"{location}: {message}"
        )
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "Invalid arguments: " + "; ".join(parts) + "."
