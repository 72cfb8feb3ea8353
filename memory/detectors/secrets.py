"""Secret detection: credentials and keys that must not be stored in a memory item.

Matched on the original text, because secrets are case-sensitive. Token rules recognise the
providers' formats; assignment rules find ``password = ...``-style literals. Placeholders, masks
and references to the environment are not secrets. The list is in ``docs/detectors.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from memory.detectors.normalisation import word_set
from memory.detectors.signal import KIND_SECRET, Signal

_PLACEHOLDER_WORDS_RE: Final = re.compile(
    r"example|your|placeholder|redacted|changeme|change_me|change-me|dummy|xxxx|\*\*\*|\.\.\.|…"
    r"|replace|insert|notreal|not_real|not-a-real|fake|sample",
    re.IGNORECASE,
)
# Template / reference syntax: ${X}, $(cmd), {{ x }}, <x>, %(x)s, %APPDATA%, $X, {x}.
_TEMPLATE_RE: Final = re.compile(r"\$[{(]|\{\{|<[^<>]{0,60}>|%\(|^[$%<]|\{[^{}]{0,60}\}")
_DUMMY_VALUES: Final = word_set("password passwd secret changeit none null undefined true false")


def _is_placeholder(value: str) -> bool:
    """Template syntax, masks and obvious example values are not secrets."""
    if not value or _TEMPLATE_RE.search(value):
        return True
    distinct = len(set(value.lower()))
    if distinct == 1 or (len(value) >= 8 and distinct <= 2):
        return True
    if value.lower() in _DUMMY_VALUES:
        return True
    return _PLACEHOLDER_WORDS_RE.search(value) is not None


def _not_placeholder(value: str) -> bool:
    return not _is_placeholder(value)


def _token_like(value: str) -> bool:
    has_digit = any(c.isdigit() for c in value)
    return has_digit and any(c.isalpha() for c in value) and not _is_placeholder(value)


def _strong_token(value: str) -> bool:
    """Mixed case and digits: rules out kebab-case identifiers that happen to start with ``sk-``."""
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed and any(c.isdigit() for c in value) and not _is_placeholder(value)


def _strong_letters(value: str) -> bool:
    """Mixed-case letters (Hugging Face tokens have no digits)."""
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed and not _is_placeholder(value)


def _slack_token(value: str) -> bool:
    return len(value) >= 20 and _token_like(value[5:])


def _strong_password(value: str) -> bool:
    """Three of lower, upper, digit and symbol, and not a placeholder: a password, not a word."""
    classes = (
        any(c.islower() for c in value) + any(c.isupper() for c in value) + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )  # fmt: skip
    return classes >= 3 and not _is_placeholder(value)


def _pem_body(value: str) -> bool:
    body = value.split("-----", 2)[-1].replace("\\n", "").replace("\\r", "")
    return not _is_placeholder(body.strip())


@dataclass(frozen=True, slots=True)
class _SecretRule:
    """A secret pattern.

    Token patterns start with their literal prefix (so the regex engine can skip ahead quickly) and
    then look *behind* that prefix to make sure it starts a token: runs such as "eyJeyJeyJ..." are
    rejected at once instead of being re-scanned from every position. ``needles`` (checked in the
    lower-cased text) gate case-insensitive patterns, and ``validate`` receives the ``v`` group (or
    the whole match) to reject placeholders.
    """

    pattern: re.Pattern[str]
    label: str
    detail: str
    validate: Callable[[str], bool] = _not_placeholder
    needles: tuple[str, ...] = ()

    def spans(self, text: str, lowered: str) -> Iterator[tuple[int, int]]:
        """Where each secret value this rule finds starts and ends (the whole match if unnamed)."""
        if self.needles and not any(needle in lowered for needle in self.needles):
            return
        group = "v" if "v" in self.pattern.groupindex else 0
        for match in self.pattern.finditer(text):
            if self.validate(match.group(group)):
                yield match.span(group)

    @property
    def signal(self) -> Signal:
        return Signal(KIND_SECRET, self.label, self.detail)


_ROTATE: Final = "remove it from the memory item and rotate it."
_SECRET_RULES: Final = (
    _SecretRule(
        re.compile(
            r"(?i:creds?|credentials|login|user(?:name)?\s{0,2}(?:/|and)\s{0,2}pass(?:word)?)\s{0,3}[:=]\s{0,3}"
            r"[^\s/:,;]{1,64}\s{0,3}[/:]\s{0,3}(?P<v>[^\s,;]{8,128})"
        ),
        "password",
        f"Contains a user name and password pair; {_ROTATE}",
        _strong_password,
        needles=("cred", "login", "user"),
    ),
    _SecretRule(
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nr]){0,8}"
            r"(?:[A-Za-z-]{1,20}: [^\n\\]{1,100}(?:\s|\\[nr]){1,4}){0,4}[A-Za-z0-9+/=]{16,8192}"
        ),
        "private_key",
        f"Contains a PEM private key block; {_ROTATE}",
        _pem_body,
    ),
    _SecretRule(
        re.compile(r"A(?<![A-Za-z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        "api_key",
        f"Contains an AWS access key id; {_ROTATE}",
    ),
    _SecretRule(
        re.compile(
            r"(?i:aws_?secret_?(?:access_?)?key(?:_id)?)[\"']?\s{0,3}[:=]\s{0,3}[\"']?"
            r"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        "api_key",
        f"Contains an AWS secret access key; {_ROTATE}",
        needles=("aws",),
    ),
    _SecretRule(
        re.compile(
            r"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,251}|ithub_pat_[A-Za-z0-9_]{30,251})(?![A-Za-z0-9_])"
        ),
        "api_key",
        f"Contains a GitHub token; {_ROTATE}",
    ),
    _SecretRule(
        re.compile(r"xox(?<![A-Za-z0-9]xox)[abposre]-[A-Za-z0-9-]{10,250}"),
        "api_key",
        f"Contains a Slack token; {_ROTATE}",
        _slack_token,
    ),
    _SecretRule(
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{20,40}"),
        "api_key",
        f"Contains a Slack incoming-webhook URL; {_ROTATE}",
    ),
    _SecretRule(
        re.compile(r"[sr]k_live_(?<![A-Za-z0-9][sr]k_live_)[A-Za-z0-9]{16,247}"),
        "api_key",
        f"Contains a live Stripe secret key; {_ROTATE}",
        needles=("_live_",),
    ),
    _SecretRule(
        re.compile(
            r"sk-(?<![A-Za-z0-9_-]sk-)(?:ant-[a-z]{2,8}\d{0,3}-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,250}"
        ),
        "api_key",
        f"Contains an OpenAI- or Anthropic-style secret key; {_ROTATE}",
        _strong_token,
    ),
    _SecretRule(
        re.compile(r"AIza(?<![A-Za-z0-9_-]AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
        "api_key",
        f"Contains a Google API key; {_ROTATE}",
    ),
    _SecretRule(
        re.compile(r"glpat-(?<![A-Za-z0-9_-]glpat-)[A-Za-z0-9_-]{20,64}"),
        "api_key",
        f"Contains a GitLab access token; {_ROTATE}",
        _token_like,
    ),
    _SecretRule(
        re.compile(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
        "api_key",
        f"Contains an npm access token; {_ROTATE}",
        _token_like,
    ),
    _SecretRule(
        re.compile(r"pypi-(?<![A-Za-z0-9_-]pypi-)AgE[A-Za-z0-9_-]{50,512}"),
        "api_key",
        f"Contains a PyPI API token; {_ROTATE}",
    ),
    _SecretRule(
        re.compile(r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z]{34}(?![A-Za-z0-9])"),
        "api_key",
        f"Contains a Hugging Face access token; {_ROTATE}",
        _strong_letters,
    ),
    _SecretRule(
        re.compile(r"unf_(?<![A-Za-z0-9_]unf_)[A-Za-z0-9_-]{32,256}"),
        "api_key",
        f"Contains an Unforgetter access token; {_ROTATE}",
    ),
    _SecretRule(
        re.compile(
            r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{0,4096}"
        ),
        "jwt",
        f"Contains a JSON Web Token; {_ROTATE}",
    ),
    _SecretRule(
        re.compile(
            r"(?i:bearer|authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?(?:token|bearer))\s{1,3}"
            r"(?P<v>[A-Za-z0-9._~+/-]{20,4096}=*)"
        ),
        "bearer_token",
        f"Contains a bearer/API token in an Authorization header; {_ROTATE}",
        _token_like,
        needles=("bearer", "authorization"),
    ),
    _SecretRule(
        re.compile(
            r"(?i:authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?basic)\s{1,3}(?P<v>[A-Za-z0-9+/]{12,4096}={0,2})"
        ),
        "password",
        f"Contains HTTP Basic credentials in an Authorization header; {_ROTATE}",
        needles=("basic",),
    ),
    _SecretRule(
        re.compile(r"://[^\s:/@?#'\"<>]{0,256}:(?P<v>[^\s:/@?#'\"<>]{1,256})@[^\s/?#'\"<>@]{1,256}"),
        "connection_string",
        f"Contains a URL or connection string with an inline password; {_ROTATE}",
    ),
)

# The rules that check their own words first (see _TOKEN_MARKS).
_GATED_RULES: Final = tuple(rule for rule in _SECRET_RULES if rule.needles)
# All of their words: most texts hold none, and then no gated rule is asked at all.
_GATED_NEEDLES: Final = tuple(dict.fromkeys(needle for rule in _GATED_RULES for needle in rule.needles))

# Assignments are found from the (lower-cased) key word outwards: plain ``str.find`` scans are much
# cheaper than a case-insensitive alternation over the whole text.
_ASSIGNMENT_KEYS: Final = ("password", "passwd", "passphrase", "pwd", "secret", "token", "key")
# Each key followed by a separator; literal-prefixed, so the scans are cheap (run on lower-cased text).
_ASSIGNMENT_KEY_RES: Final = tuple(
    (
        key,
        key[:4],
        re.compile(re.escape(key) + r"(?![a-z0-9_])[\"']?[ \t]{0,3}(?::|=|(?:is|was)(?![a-z0-9_])|$)"),
    )
    for key in _ASSIGNMENT_KEYS
)
# Every key's stem: a text without one has no assignment to look at.
_ASSIGNMENT_STEMS: Final = tuple(dict.fromkeys(stem for _, stem, _ in _ASSIGNMENT_KEY_RES))
_PASSWORD_KEYS: Final = frozenset(("password", "passwd", "passphrase", "pwd"))
# "key" alone is too generic (cache_key, primary key): it needs one of these right before it.
_KEY_PREFIX_RE: Final = re.compile(
    r"(?:api|access|private|signing|encryption|master|secret|secret[_-]?access)[ _-]?$|apikey$"
)
_ASSIGNMENT_TAIL_RE: Final = re.compile(
    r"(?![A-Za-z0-9_])[\"']?[ \t]{0,3}(?P<sep>:=|=>|==|=|:|(?:is|was)(?![A-Za-z0-9_]))[ \t]{0,3}"
    r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\n]{1,256})(?P=q)|(?P<uv>[^\s\"'`,;]{1,256}))",
    re.IGNORECASE,
)
_CODE_VALUE_RE: Final = re.compile(r"[()\[\]]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_]\w*")
_KEY_WORDS_RE: Final = re.compile(r"password|passwd|secret|token|key|env", re.IGNORECASE)


def _assignment_is_secret(text: str, key: str, match: re.Match[str]) -> bool:
    quoted = match.group("qv")
    value = quoted if quoted is not None else match.group("uv").rstrip(".,)")
    if len(value) < 8 or value.isdigit() or value.startswith(("/", "~/", "./")):
        return False
    if quoted is None and _CODE_VALUE_RE.search(value):
        return False  # os.environ["X"], get_password(), settings.DB_PASSWORD
    if key == "token" and not (len(value) >= 16 and _token_like(value)):
        return False
    if _is_placeholder(value):
        return False
    if quoted is not None:
        return True
    sep = match.group("sep").lower()
    identifier = _IDENTIFIER_RE.fullmatch(value) is not None
    if identifier and _KEY_WORDS_RE.search(value):
        return False  # `password = DB_PASSWORD`, `secret: SECRET_NAME`
    sep_start, sep_end = match.span("sep")
    spaced = text[sep_start - 1 : sep_start].isspace() or text[sep_end : sep_end + 1].isspace()
    if sep in ("=", "==", ":=", "=>") and spaced and identifier and not any(c.isdigit() for c in value):
        return False  # `password = other_variable` is code, not a literal
    if sep in (":", "is", "was") or spaced:
        # Prose and YAML: "api_key: required" is not a secret, "password: Tr0ub4dor&3" is.
        return not value.isalpha() or not (value.islower() or value.isupper())
    return True


def _assignment_spans(text: str, lowered: str) -> Iterator[tuple[int, int, Signal]]:
    if len(lowered) != len(text):  # a few characters change length when lower-cased ("İ")
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    if not _holds_any(lowered, _ASSIGNMENT_STEMS):
        return
    seen: set[tuple[str, str]] = set()  # repeated snippets are judged once
    for key, stem, key_re in _ASSIGNMENT_KEY_RES:
        if stem not in lowered:  # "pass" gates three keys with one cheap check
            continue
        for candidate in key_re.finditer(lowered):
            index = candidate.start()
            if key == "key" and not _KEY_PREFIX_RE.search(lowered, max(0, index - 20), index):
                continue
            match = _ASSIGNMENT_TAIL_RE.match(text, index + len(key))
            if match is None or (key, match.group()) in seen:
                continue
            seen.add((key, match.group()))
            if not _assignment_is_secret(text, key, match):
                continue
            start, end = match.span("qv") if match.group("qv") is not None else match.span("uv")
            yield start, end, _PASSWORD_SIGNAL if key in _PASSWORD_KEYS else _ASSIGNED_KEY_SIGNAL


_PASSWORD_SIGNAL: Final = Signal(
    KIND_SECRET, "password", "Assigns a literal password; keep it in a secret manager instead."
)
_ASSIGNED_KEY_SIGNAL: Final = Signal(
    KIND_SECRET, "api_key", "Assigns a literal secret or API key; keep it in a secret manager instead."
)


# Most texts hold none of the characters every token rule's match starts with or contains: such a
# text is only given to the rules gated by words (checked by `spans` itself) and the assignments.
# Each ungated rule's match holds one of these, so a text without any cannot match the rule.
_TOKEN_MARKS: Final = ("-", "_", "://", "AKIA", "ASIA", "AIza", "eyJ")


def _holds_any(text: str, words: tuple[str, ...]) -> bool:
    """Whether any of `words` is in `text`: a loop of `in` scans, each cheaper than a generator's
    step or a regex alternation (which tries every alternative at every position)."""
    for word in words:  # noqa: SIM110 - a generator costs more than the scans it drives
        if word in text:
            return True
    return False


def secret_spans(text: str) -> Iterator[tuple[int, int, Signal]]:
    """Every secret value in ``text``: (start, end, signal), rule by rule, for redaction."""
    lowered = text.lower()
    # Each scan below only skips rules that could not match: a bulk import screens every item.
    if _holds_any(text, _TOKEN_MARKS):
        rules: tuple[_SecretRule, ...] = _SECRET_RULES
    elif _holds_any(lowered, _GATED_NEEDLES):
        rules = _GATED_RULES
    else:
        rules = ()
    for rule in rules:
        for start, end in rule.spans(text, lowered):
            yield start, end, rule.signal
    yield from _assignment_spans(text, lowered)


def find_secret(text: str) -> Signal | None:
    """Return the first secret signal in ``text``, or ``None``."""
    return next((signal for _, _, signal in secret_spans(text)), None)
