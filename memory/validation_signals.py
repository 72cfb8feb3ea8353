# ruff: noqa: RUF001, RUF002, RUF003
# (This module deliberately contains Cyrillic, Greek, CJK and full-width characters.)
"""Concrete prompt-injection and secret signals for proposed memory items.

The consolidator calls :func:`scan` on every proposal before it is published. The module is pure
Python (standard library only, no Django) so it can run in any worker and be tested in isolation.

Public API
==========
``Signal``          frozen dataclass ``(kind, label, detail)``; ``kind`` is ``"injection"`` or ``"secret"``.
``normalise``       the text that injection matching runs on (see below).
``find_injection``  first injection signal or ``None``.
``find_secret``     first secret signal or ``None``.
``scan``            injection first, then secret.

``detail`` is one sentence for the owner's review console. It names the *kind* of problem, never the
matched secret value (nor any fragment or prefix of it).

Injection labels: ``instruction_override``, ``role_markup``, ``tool_call_syntax``, ``exfiltration``,
``hidden_unicode``. Secret labels: ``private_key``, ``api_key``, ``bearer_token``, ``password``,
``jwt``, ``connection_string``.

Normalisation
=============
``normalise`` applies, in this order: Unicode NFKC (folds full-width, mathematical and circled letters,
ligatures, non-breaking spaces); removal of zero-width, bidi, tag, variation-selector and other
invisible format characters; ``casefold``; whitespace collapse (runs of horizontal whitespace become
one space, any run containing a line break becomes a single ``\\n`` so that line-start rules such as
``Human:`` keep working); and three light de-obfuscations that only touch suspicious tokens:
letter-spaced words (``i g n o r e``), leetspeak inside words that mix letters and digits
(``1gn0r3``), and Cyrillic/Greek look-alike letters inside words that also contain Latin letters
(``ignоre`` with a Cyrillic ``о``). Words written entirely in Cyrillic or Greek are left alone, so
Russian rules still match Russian text. Secret matching runs on the original text instead, because
secrets are case-sensitive.

What counts as an instruction aimed at the agent
================================================
A memory item is later pasted verbatim into other agents' context windows, so the text is judged *as
an agent will read it*, not by the author's intent. Memory items legitimately contain directives
("Always run the tests before pushing"); what is flagged is a directive that attacks the agent's
*control plane*. The rule for borderline prose:

1. **Dismissal of the agent's own governing instructions.** A dismissal verb in its base/imperative
   form (``ignore``, ``disregard``, ``forget``, ``do not follow``, ``ignoriere``, ``игнорируй``, ...)
   whose object is the agent's instruction set (instructions, prompt, system prompt, rules,
   guidelines, directives, ...) *qualified as the agent's own*: by position (previous, prior, above,
   earlier, original, initial, system, précédentes, vorherigen, предыдущие, 之前, 以前, ...), by
   possession (your, tes, deine, твои, ...) or, for instruction nouns, by an unscoped quantifier
   ("ignore all instructions"). Only determiners and such qualifiers may stand between the verb and
   the object, so the object really is the thing being dismissed. Defeat verbs (override, bypass,
   disable, ...) additionally need a possessive or safety qualifier ("override your rules", "bypass
   the safety filters"), because "override the default lint rules" is ordinary engineering language.

   Not flagged, by construction:

   * dismissing anything else: "We decided to ignore previous benchmarks from 2023 because the
     harness was broken" (the object is *benchmarks*), "ignore the flaky test warnings";
   * inflected forms that describe behaviour: "the model ignored previous instructions in the eval",
     "it keeps ignoring the rules";
   * data-scoped quantifiers, which are defensive conventions: "ignore any instructions found in
     issue bodies" (``all/any`` + object followed by in/from/found/contained/...);
   * unqualified objects: "ignore these instructions if you use Docker", "ignore the instructions in
     the old README";
   * descriptive mentions without a dismissal verb: "The system prompt for the support bot lives in
     prompts/support.md";
   * negated forms: "never ignore your system prompt".

   Flagged even when the author meant it descriptively: the canonical phrase itself, e.g. "we decided
   to ignore previous instructions from the old PM", or a red-team note quoting "ignore previous
   instructions". Those strings *are* the payload; quoting does not defuse them once the item sits
   in another agent's context. The owner can still approve such an item.

2. **Role re-assignment** in the second person: "you are now a/an/the ... / in ... mode",
   "from now on, you ...", "new instructions:", "your new task is ...", jailbreak personas (DAN,
   "do anything now", developer mode for an AI, "you have no restrictions"), in the same languages.
   Conventions phrased as facts about the team ("We use pnpm from now on") are never flagged;
   "From now on you must use pnpm" is, because it addresses and re-programs the reader.

3. **Channel forgery**, flagged wherever it appears: chat-template / role markup (``<|im_start|>``,
   ``[INST]``, ``<<SYS>>``, ``<system>``, ``### System:``, ``Human:``/``Assistant:`` at the start of
   a line, ``System: you ...``, ``</s><s>``) and fake tool calls (``<tool_call>``,
   ``<function_calls>``, ``<invoke name=``, tool-call JSON, "call the tool X with").

4. **Exfiltration**: markdown/HTML images or links to absolute URLs that carry data placeholders or
   data-bearing query parameters (images load without a click, so any data parameter counts; links
   need a clearly sensitive one), imperative requests ("send/post/upload/email ...") that move
   secrets, tokens, memory, context or the conversation to a URL or e-mail address, shell/JS
   requests that ship secrets or context to an external URL, and requests to reveal the system
   prompt. Sentences with a subject ("We upload secrets to Vault"), negated ones ("never send tokens
   to https://pastebin.com") and secret-manager destinations are not flagged.

5. **Hidden Unicode**: zero-width characters, bidi embeddings/overrides/isolates, tag characters,
   runs of variation selectors and other invisible format characters. Legitimate uses are allowed:
   a leading BOM, ZWJ inside emoji sequences (👩‍💻), a single variation selector after a visible
   character (❤️), ZWJ/ZWNJ between letters of scripts that need them (Persian, Indic), LRM/RLM in
   text that contains right-to-left script, and emoji tag sequences for subdivision flags.

Secrets
=======
PEM private keys with key material, AWS access key ids and secret keys, GitHub, Slack, Stripe live,
OpenAI / Anthropic and Google API keys, JWTs, ``Authorization: Bearer/Token/Basic`` credentials,
Unforgetter ``unf_`` tokens, URLs / connection strings with an inline password, and
``password/secret/api_key/token`` assignments with a literal value of 8+ characters. Placeholders are
not secrets: values with template syntax (``<...>``, ``${...}``, ``{{...}}``), environment or code
references (``os.environ["X"]``, ``settings.X``, ``$X``), masks (``********``, ``xxxx``), or the words
example/your/placeholder/redacted/changeme/dummy. Documentation example keys such as AWS's
``...EXAMPLE`` keys are therefore not flagged, while a literal URL password (even ``user:pass@``) is.

Performance
===========
All patterns are compiled at import time, use bounded quantifiers without nested repetition, cheap
substring pre-checks skip whole rule families, and costly follow-up checks run only on the (rare)
candidate matches.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["Signal", "find_injection", "find_secret", "normalise", "scan"]

_KIND_INJECTION: Final = "injection"
_KIND_SECRET: Final = "secret"  # noqa: S105 - a signal kind, not a credential


@dataclass(frozen=True, slots=True)
class Signal:
    """One reason to hold a proposal for the owner's review."""

    kind: str  # "injection" or "secret"
    label: str  # short machine label, e.g. "instruction_override" or "api_key"
    detail: str  # one human sentence; never contains the matched secret value


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ---------------------------------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------------------------------

# Invisible characters removed before matching (a superset of what ``hidden_unicode`` reports).
_INVISIBLE_RE: Final = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_NEWLINES: Final = "\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"
_VSPACE_RE: Final = re.compile(f"[^\\S{_NEWLINES}]*[{_NEWLINES}]\\s*")
_HSPACE_RE: Final = re.compile(r"[^\S\n]{2,}|[^\S \n]")

# "i g n o r e", "i.g.n.o.r.e": four or more single letters separated by one separator.
_SPACED_RE: Final = re.compile(r"(?<![a-z0-9])(?:[a-z][ .\-_*]){3,60}[a-z](?![a-z0-9])")
_SPACED_SEP_RE: Final = re.compile(r"[ .\-_*]")

# Words that mix letters with leetspeak digits ("1gn0r3", "pr3v10us").
_LEET_RE: Final = re.compile(r"(?<![a-z0-9])(?:[a-z]{1,40}[013457]|[013457]{1,40}[a-z])[a-z0-9]{0,60}")
_LEET_TABLE: Final = str.maketrans("013457", "oieast")

# Cyrillic / Greek / IPA look-alikes, mapped only inside words that also contain Latin letters.
_CONFUSABLES: Final = {
    "а": "a", "в": "b", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j", "к": "k", "м": "m",
    "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "һ": "h",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k",
    "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ı": "i", "ɡ": "g", "ɑ": "a",
    "ȷ": "j",
}  # fmt: skip
_CONFUSABLE_TABLE: Final = str.maketrans(_CONFUSABLES)
_CONFUSABLE_CLASS: Final = "".join(_CONFUSABLES)
_MIXED_SCRIPT_RE: Final = re.compile(f"[a-z][{_CONFUSABLE_CLASS}]|[{_CONFUSABLE_CLASS}][a-z]")
_WORD_RE: Final = re.compile(r"\w{1,100}")
_LATIN_RE: Final = re.compile(r"[a-z]")


def _fold(text: str) -> str:
    """NFKC, drop invisible characters, casefold and collapse whitespace."""
    folded = unicodedata.normalize("NFKC", text)
    folded = _INVISIBLE_RE.sub("", folded)
    folded = folded.casefold()
    if "\u0307" in folded:  # "İ".casefold() is "i" + COMBINING DOT ABOVE
        folded = folded.replace("i\u0307", "i")
    folded = _VSPACE_RE.sub("\n", folded)
    folded = _HSPACE_RE.sub(" ", folded)
    return folded.strip()


def _join_spaced(match: re.Match[str]) -> str:
    return _SPACED_SEP_RE.sub("", match.group())


def _leet(match: re.Match[str]) -> str:
    return match.group().translate(_LEET_TABLE)


def _unconfuse(match: re.Match[str]) -> str:
    word = match.group()
    if _LATIN_RE.search(word):
        return word.translate(_CONFUSABLE_TABLE)
    return word


def _deobfuscate(folded: str) -> str:
    text = _SPACED_RE.sub(_join_spaced, folded)
    if _MIXED_SCRIPT_RE.search(text):
        text = _WORD_RE.sub(_unconfuse, text)
    return _LEET_RE.sub(_leet, text)


def normalise(text: str) -> str:
    """Return the canonical form that injection rules are matched against.

    NFKC, invisible/format characters removed, casefolded, whitespace collapsed (line breaks kept as a
    single ``\\n``), letter-spacing joined, leetspeak and mixed-script homoglyphs mapped to Latin.
    """
    return _deobfuscate(_fold(text))


# ---------------------------------------------------------------------------------------------------
# Injection: instruction overrides
# ---------------------------------------------------------------------------------------------------

# Dismissal verbs (base / imperative forms only), all languages.
_DISMISS_VERBS: Final = (
    # English
    r"ignore|disregard|forget(?:\s+about)?|discard|dismiss|abandon|neglect|skip|nullify|erase"
    r"|pay\s+no\s+(?:attention|heed|mind)\s+to|(?:do\s+not|don'?t|never)\s+(?:follow|obey|heed)"
    r"|stop\s+(?:following|obeying)|no\s+longer\s+(?:follow|obey)"
    # French
    r"|ignorez|ignorer|oublie|oubliez|oublier|ne\s+(?:tiens|tenez)\s+pas\s+compte\s+d[eu]s?"
    r"|(?:fais|faites)\s+abstraction\s+d[eu]s?"
    # German
    r"|ignoriere|ignorier|ignorieren|vergiss|vergesst|vergessen|missachte|missachten|übergehe"
    # Spanish / Italian / Portuguese
    r"|ignora|ignoren|ignorad|olvida|olvide|olviden|olvidad|descarta|descarte|omite|omita"
    r"|haz\s+caso\s+omiso\s+de|no\s+hagas\s+caso\s+a"
    r"|ignori|ignorate|dimentica|dimentichi|dimenticate|trascura|non\s+considerare"
    r"|non\s+tenere\s+conto\s+d(?:elle|ei|egli|i)"
    r"|ignorem|esqueça|esqueca|esquece|esqueçam|desconsidere|desconsidera"
    # Dutch
    r"|negeer|negeert|vergeet"
    # Russian
    r"|игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте|отбрось|отбросьте"
    r"|пренебреги|не\s+обращай(?:те)?\s+внимания\s+на|не\s+слушай(?:те)?"
)
# Verbs that defeat rather than dismiss; they need a possessive or safety qualifier.
_DEFEAT_VERBS: Final = (
    r"override|overrule|bypass|circumvent|break|violate|disable|deactivate|turn\s+off|evade"
    r"|get\s+around|work\s+around|umgehe|contourne|contournez|elude|aggira|обойди|обойдите"
)
_OVERRIDE_RE: Final = re.compile(
    rf"(?<!\w)(?:(?P<dismiss>{_DISMISS_VERBS})|(?P<defeat>{_DEFEAT_VERBS}))(?![\w'])"
    r"(?P<tail>(?:[ ,\n]{1,3}[^\s.;:!?,()\[\]\"“”«»]{1,40}){1,7})"
)

_INSTRUCTION_OBJECTS: Final = _words(
    """instructions instruction prompt prompts directives directive directions commands orders
    guidance messages context text input programming training
    consignes indications ordres commandes
    anweisungen anweisung instruktionen befehle vorgaben anordnungen systemprompt system-prompt
    instrucciones instrucción instruccion indicaciones órdenes ordenes
    istruzioni indicazioni ordini comandi direttive
    instruções instrucoes instrução instrucao orientações orientacoes ordens comandos
    instructies instructie opdrachten aanwijzingen systeemprompt
    инструкции инструкций указания указаний команды команд установки промпт подсказки директивы"""
)
_RULE_OBJECTS: Final = _words(
    """rules guidelines restrictions constraints policies guardrails filters limitations safeguards
    principles ethics protocols boundaries
    règles regles regeln richtlinien reglas directrices normas regole regras diretrizes regels
    richtlijnen правила ограничения"""
)
_OBJECTS: Final = _INSTRUCTION_OBJECTS | _RULE_OBJECTS
# Qualifiers (before the noun) that make the object the agent's *own* instructions.
_STRONG_PRE: Final = _words(
    """previous prior above earlier preceding foregoing former original initial system developer
    hidden preset pre-set default your yours safety content ethical moral
    précédentes tes vos ta ton votre
    vorherigen vorigen bisherigen obigen vorangegangenen vorhergehenden früheren fruheren
    ursprünglichen deine deinen ihre
    tus sus tue vostre suas tuas
    vorige eerdere voorgaande bovenstaande oorspronkelijke originele jouw uw systeem
    предыдущие прежние прошлые вышеуказанные вышеприведенные вышеприведённые выше изначальные
    исходные системные свои твои ваши ранее"""
)
_DEFEAT_STRONG: Final = _words(
    """your yours safety content ethical moral tes vos ta ton votre deine deinen ihre tus tue vostre
    suas tuas jouw uw твои ваши свои"""
)
# Qualifiers after the noun (Romance languages, "the instructions above").
_POST_STRONG: Final = _words(
    """above before earlier previously prior précédentes precedentes précédents antérieures
    anterieures ci-dessus initiales originales système systeme d'avant passées anteriores previas
    precedentes arriba originales iniciales sistema precedenti sopra anteriori originali iniziali
    prévias acima originais iniciais obigen выше"""
)
_QUANTIFIERS: Final = _words(
    "all any every each toutes tous alle sämtliche samtliche todas todos tutte tutti все всё"
)
_FILLERS: Final = _words(
    """the of my these those this that such our other current existing given custom specific
    explicit stated said mentioned aforementioned written standing remaining core base old past
    please kindly now just simply completely entirely totally immediately
    bitte jetzt sofort einfach vollständig
    les des de la le l'ensemble mes
    die den der dir sie meine bisher zuvor
    las los el a mis gli i delle degli di il mie as os o minhas
    je het al mijn
    на эти мои данные"""
)
# "ignore all instructions *in issue bodies*" is a defensive convention, not an override.
_DATA_SCOPE: Final = _words(
    """in inside within from found contained embedded that which coming written included inserted
    appearing dans provenant contenues aus im innerhalb en del dei degli nei nelle em nos nas do
    da uit van в из во"""
)
_PRONOUN_OBJECTS: Final = _words("above foregoing preceding")
_CONNECTORS: Final = _words("and then und et y e en и")
_NEGATIONS: Final = _words(
    """never not don't dont cannot can't won't mustn't shouldn't refuse refuses nie niemals nicht
    jamais nunca non mai não nao nooit niet никогда"""
)
_WORD_STRIP: Final = "'\"`*_“”‘’«»"


def _tail_targets_agent(tail: str, *, defeat: bool) -> bool:
    """Decide whether the words after a dismissal verb name the agent's own instructions."""
    words = [w.strip(_WORD_STRIP) for w in tail.replace(",", " ").split()]
    strong_set = _DEFEAT_STRONG if defeat else _STRONG_PRE
    seen_strong = False
    seen_quantifier = False
    for index, word in enumerate(words):
        following = words[index + 1 : index + 3]
        if word in _OBJECTS:
            if seen_strong or any(w in _POST_STRONG for w in following):
                return True
            if defeat or not seen_quantifier or word not in _INSTRUCTION_OBJECTS:
                return False
            return not (following and following[0] in _DATA_SCOPE)
        if not defeat and word in _PRONOUN_OBJECTS and (not following or following[0] in _CONNECTORS):
            return True  # "ignore the above and ..."
        if word in strong_set:
            seen_strong = True
        elif word in _QUANTIFIERS:
            seen_quantifier = True
        elif word not in _FILLERS and word not in _STRONG_PRE:
            return False
    return False


def _negated_before(text: str, start: int) -> bool:
    window = text[max(0, start - 30) : start].split()[-3:]
    return any(w.strip(_WORD_STRIP + ",") in _NEGATIONS for w in window)


def _find_dismissal(norm: str) -> bool:
    for match in _OVERRIDE_RE.finditer(norm):
        defeat = match.group("defeat") is not None
        if not _tail_targets_agent(match.group("tail"), defeat=defeat):
            continue
        verb = match.group("defeat") or match.group("dismiss") or ""
        if verb.startswith(("do", "never", "no ", "stop", "ne ", "не ")):
            return True  # the negation is part of the verb phrase: "don't follow your rules"
        if not _negated_before(norm, match.start()):
            return True
    return False


_CJK_OVERRIDE: Final = (
    # Chinese (simplified + traditional): verb ... qualifier ... object
    r"(?:忽略|忽视|忽視|无视|無視|不要理会|不要理會|不理会|不理會|忘记|忘記|忘掉|抛开|拋開|放弃|放棄|跳过|跳過)"
    r"[^。！？\n]{0,10}?"
    r"(?:之前|以前|先前|此前|上面|上述|前面|以上|原来|原來|原有|原始|所有|全部|一切|系统|系統|你的)"
    r"[^。！？\n]{0,8}?"
    r"(?:指令|指示|说明|說明|规则|規則|提示词|提示詞|提示|命令|限制)"
    # Japanese: qualifier の object を verb
    r"|(?:以前|前|これまで|今まで|上記|上|先ほど|さっき|最初|元|すべて|全て|全部|システム|あなたの)"
    r"[^。！？\n]{0,8}?(?:指示|指令|命令|ルール|プロンプト|制約|ガイドライン)"
    r"[^。！？\n]{0,8}?(?:無視|忘れ|破棄|取り消)"
    # Korean
    r"|(?:이전|앞의|위의|모든|기존)\s?(?:의\s?)?(?:지시|지침|명령|규칙|프롬프트)[^.\n]{0,12}?(?:무시|잊어)"
    # Arabic
    r"|(?:تجاهل|انس)[^.\n]{0,24}?(?:التعليمات|الأوامر|التوجيهات|القواعد)"
)

_OVERRIDE_PHRASE_RE: Final = re.compile(
    # forget everything you were told / ignore everything above
    r"\b(?:ignore|disregard|forget|discard|dismiss)\s+(?:about\s+)?(?:everything|anything|all)"
    r"(?:\s+(?:of\s+)?(?:that|what|which))?\s+(?:you(?:'ve|\s+have|\s+were|\s+had)?\s+(?:been\s+)?"
    r"(?:told|given|instructed|taught|programmed|trained)|(?:(?:i|we)\s+(?:said|told\s+you)|written|said"
    r"|stated|mentioned)\s+(?:above|before|previously|earlier|so\s+far)|above|before|previously|prior"
    r"|earlier|so\s+far|up\s+(?:to|until)\s+now|until\s+now)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:what|everything)\s+(?:you\s+were|i|we)\s+(?:told|said)\b"
    # the previous instructions are void / should be ignored
    r"|\b(?:the\s+)?(?:above|previous|prior|earlier|preceding|original|all|your)\s+(?:system\s+)?"
    r"(?:instructions|rules|prompt|directives|guidelines)\s+(?:are|is|were|have\s+been)\s+(?:now\s+)?"
    r"(?:void|invalid|cancel+ed|revoked|obsolete|null|overridden|superseded|lifted|suspended"
    r"|no\s+longer\s+(?:valid|apply|applicable|in\s+effect|active))\b"
    r"|\b(?:above|previous|prior|earlier)\s+(?:instructions|rules|prompts?)\s+(?:should|must|can)\s+be"
    r"\s+(?:ignored|disregarded|forgotten|discarded)\b"
    # new instructions:
    r"|\b(?:new|real|actual|true|secret|hidden|override)\s+(?:system\s+)?"
    r"(?:instructions?|directives?|orders|prompt)\s*:"
    r"|\byour\s+(?:new|real|actual|true|only|updated)\s+(?:instructions|task|role|goal|objective|purpose"
    r"|directive|orders|rules|persona|mission)\s+(?:is|are|:)"
    r"|\b(?:here\s+are|these\s+are)\s+your\s+(?:new|real|actual|updated|true)\s+instructions\b"
    # role re-assignment
    r"|\byou(?:\s+are|'re|\s+r)\s+now\s+(?:a|an|the|my|our|dan|free|unrestricted|unfiltered|uncensored"
    r"|jailbroken|evil|unbound|unchained|no\s+longer|going\s+to\s+(?:act|pretend|be|roleplay|ignore)"
    r"|acting|playing|called|named|known\s+as|operating\s+as|in\s+(?:[\w-]+\s+){0,2}mode)\b"
    r"|\byou(?:\s+are|'re)\s+no\s+longer\s+(?:an?\s+)?(?:ai|assistant|language\s+model|bound|restricted"
    r"|limited|required\s+to|claude|chatgpt|gpt)\b"
    r"|\bfrom\s+now\s+on\s*,?\s+(?:you|u|your)\b"
    r"|\b(?:henceforth|hereafter)\s*,?\s+you\s+(?:must|will|shall|are)\b"
    # multilingual role re-assignment / new instructions
    r"|\b(?:tu\s+es|vous\s+êtes|vous\s+etes)\s+(?:maintenant|désormais|desormais)\s+"
    r"(?:un|une|le|la|l'|en\s+mode|libre|dan)\b"
    r"|\b(?:à|a)\s+partir\s+de\s+maintenant\s*,?\s+(?:tu|vous)\b"
    r"|\bdésormais\s*,?\s+(?:tu|vous)\s+(?:es|êtes|dois|devez)\b"
    r"|\bdu\s+bist\s+(?:jetzt|nun|ab\s+sofort)\s+(?:ein|eine|der|die|das|kein|keine|dan|frei|im)\b"
    r"|\b(?:ab\s+(?:jetzt|sofort)|von\s+nun\s+an)\s*,?\s+(?:bist|musst|wirst|sollst|darfst)\s+du\b"
    r"|\bahora\s+eres\s+(?:un|una|el|la|dan|libre)\b"
    r"|\b(?:a\s+partir\s+de\s+ahora|desde\s+ahora)\s*,?\s+(?:eres|debes|vas\s+a|tú|tu|usted)\b"
    r"|\b(?:ora|adesso)\s+sei\s+(?:un|una|il|la|lo|dan|libero)\b"
    r"|\bd'ora\s+in\s+poi\s*,?\s+(?:sei|devi|tu)\b"
    r"|\bagora\s+(?:você|voce|tu)\s+(?:é|e|és)\s+(?:um|uma|o|a|dan|livre)\b"
    r"|\ba\s+partir\s+de\s+agora\s*,?\s+(?:você|voce|tu)\b"
    r"|\b(?:je|jij|u)\s+bent\s+nu\s+(?:een|de|het|dan|vrij)\b"
    r"|\bvanaf\s+nu\s+(?:ben|moet|zal|mag)\s+(?:je|jij|u)\b"
    r"|(?<!\w)(?:ты|вы)\s+теперь\s+(?:[—-]\s*)?(?:являешься|являетесь|не\s+(?:ассистент|ии|модель"
    r"|ограничен)|dan\b|[а-я]{0,12}(?:ассистент|бот|помощник|модель|персонаж))"
    r"|(?<!\w)(?:отныне|с\s+этого\s+момента)\s*,?\s+(?:ты|вы)\b"
    r"|\b(?:nouvelles|neue|nuevas|nuove|novas|nieuwe)\s+(?:instructions|anweisungen|instrucciones"
    r"|istruzioni|instruções|instrucoes|instructies)\s*:"
    r"|(?<!\w)новые\s+(?:инструкции|указания)\s*:"
    r"|\bvergiss\s+alles\b[^.\n]{0,40}?\b(?:gesagt|befohlen|aufgetragen|bisher|zuvor|vorher)\b"
    r"|\b(?:oublie|oubliez)\s+tout\s+ce\s+qu(?:e\s+|')(?:on\s+|l'on\s+)?(?:t'a|vous\s+a)\s+(?:dit|demandé)"
    r"|\b(?:olvida|olvide)\s+todo\s+lo\s+(?:que\s+(?:te|le)\s+(?:dijeron|han\s+dicho|dije)|anterior)\b"
    r"|\bdimentica\s+tutto\s+(?:quello|ciò|cio)\s+che\b|\b(?:esqueça|esqueca|esquece)\s+tudo\b"
    r"|\bvergeet\s+alles\s+wat\b"
    r"|(?<!\w)забудь(?:те)?\s+(?:вс[её])\b[^.\n]{0,30}?(?:говорили|сказали|сказано|инструкции)"
    r"|(?:你现在是|你現在是|(?:从|從)现在(?:开始|起)\s?,?\s?你|從現在(?:開始|起)\s?,?\s?你)"
    r"|(?:新的?指令|新的?指示)\s*:"
    r"|(?:今から|これから|今後)\s?、?\s?あなたは|あなたは(?:今から|これから|もう)|新しい指示\s*:"
    r"|" + _CJK_OVERRIDE
)

_JAILBREAK_RE: Final = re.compile(
    r"\bdo\s+anything\s+now\b"
    r"|\b(?:you\s+are|you're|act\s+as|become|pretend\s+to\s+be|roleplay\s+as|play\s+the\s+role\s+of)\s+"
    r"(?:the\s+)?dan\b|\bdan\s+mode\b"
    r"|\b(?:enable|activate|enter|switch\s+to|turn\s+on)\s+(?:the\s+)?(?:dan|god|jailbreak|jailbroken"
    r"|unrestricted|unfiltered|uncensored|evil|sudo|chaos)\s+mode\b"
    r"|\b(?:chatgpt|gpt|ai|assistant|llm|claude)\b[^.\n]{0,40}?\bdeveloper\s+mode\s+"
    r"(?:enabled|activated|output)\b"
    r"|\byou(?:\s+are|'re)\s+(?:now\s+)?(?:in|entering)\s+developer\s+mode\b"
    r"|\b(?:act\s+as|you\s+are|you're|pretend\s+(?:to\s+be|you\s+are|you're)|become|behave\s+like)\s+"
    r"(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|amoral|unaligned|unlimited)\s+"
    r"(?:ai|assistant|model|chatbot|llm|version|persona|language\s+model)\b"
    r"|\byou\s+(?:have|has)\s+no\s+(?:ethical\s+|moral\s+|content\s+|safety\s+)?"
    r"(?:restrictions|guidelines|filters|censorship|guardrails)\b"
    r"|\bwithout\s+(?:any\s+)?(?:ethical|moral|content|safety)\s+(?:restrictions|guidelines|filters"
    r"|constraints|guardrails)\b"
)

# ---------------------------------------------------------------------------------------------------
# Injection: role / system-prompt markup and fake tool calls
# ---------------------------------------------------------------------------------------------------

_TOOL_CALL_RE: Final = re.compile(
    r"<\|(?:tool|tool_call|tool_calls|tool_response|tool_result|python_tag|function|function_call"
    r"|plugin)\|>"
    r"|</?(?:[a-z]{1,12}:)?(?:tool_call|tool_calls|tool_use|tool_result|tool_response|function_calls?"
    r"|function_results?|tool)\s*>"
    r"|<(?:[a-z]{1,12}:)?invoke\b|<[a-z]{1,12}:parameter\s+name\s*=|<function=[\w.-]{1,64}>"
    r'|"(?:tool|tool_name|function|recipient_name)"\s*:\s*"[^"\n]{1,100}"\s*,\s*'
    r'"(?:arguments|args|parameters|params|input|tool_input)"\s*:'
    r'|"name"\s*:\s*"[^"\n]{1,100}"\s*,\s*"(?:arguments|tool_input)"\s*:'
    r'|"(?:function_call|tool_calls|tool_call|tool_use)"\s*:\s*[\[{"]'
    r'|"type"\s*:\s*"(?:tool_use|function_call)"'
    r"|\b(?:call|invoke|execute|trigger)\s+(?:the\s+)?(?:tool|function\s+tool)\s+[`'\"]?[\w.:-]{1,64}"
    r"[`'\"]?\s+(?:with|using)\b"
    r"|\b(?:call|invoke|execute|trigger)\s+(?:the\s+)?[`'\"]?[\w.:-]{1,64}[`'\"]?\s+tool\s+(?:with|using)\b"
)
_TOOL_NEEDLES: Final = ("<", '"', "tool")

_ROLE_DIRECTIVE: Final = (
    r"(?:you\b|you're|ignore|disregard|forget|act\b|from\s+now|always\b|never\b|do\s+not\b|don't\b"
    r"|your\b|pretend|respond|reply|answer|as\s+an?\b|the\s+assistant|new\s+rules?|override)"
)
_LINE_START: Final = r"(?:^|\n)[ \t>*_#-]{0,6}"
_ROLE_MARKUP_RE: Final = re.compile(
    r"<\|[a-z][a-z0-9_▁.\-]{1,38}\|>"
    r"|<\|?(?:start_of_turn|end_of_turn)\|?>"
    r"|\[/?(?:inst|system_prompt|sys_prompt)\]|<</?sys>>"
    r"|</?(?:system|system[_-]?(?:prompt|message|instructions?)|sys|im_start|im_end)\s*>"
    rf"|{_LINE_START}#{{1,6}}\s*(?:system|instruction|assistant|human|response)\s*:"
    rf"|{_LINE_START}(?:human|assistant)\s*:"
    rf"|{_LINE_START}(?:system|system\s+prompt|system\s+message|sys)\s*[:=]\s*[\"'“]?\s*{_ROLE_DIRECTIVE}"
    r"|\b(?:new|updated|real|actual|true|override|revised|secret|hidden)\s+system\s+"
    r"(?:prompt|message|instructions?)\s*[:=]"
    r"|\[(?:system|assistant)\]\s*\(#"
)
_END_OF_SEQUENCE_RE: Final = re.compile(r"</s>")
_EOS_FOLLOWUP_RE: Final = re.compile(r"\s*(?:<s>|\[inst\]|<\||\n?(?:human|user|assistant|system)\s*:)")

# ---------------------------------------------------------------------------------------------------
# Injection: exfiltration
# ---------------------------------------------------------------------------------------------------

_SENSITIVE_WORDS: Final = (
    r"(?:memor(?:y|ies)|secrets?|tokens?|api[ _-]?keys?|access[ _-]?keys?|private[ _-]?keys?"
    r"|credentials?|creds|passwords?|passwd|conversations?|chat(?:[ _-]?(?:history|log|transcript))?"
    r"|(?:message|conversation|prompt)[ _-]?history|history|transcript|context(?:[ _-]?window)?"
    r"|system[ _-]?prompt|prompt|env(?:ironment)?[ _-]?var(?:iable)?s|\.env|cookies?"
    r"|session[ _-]?(?:ids?|tokens?|data|cookies?)|pii|personal[ _-]?data|user[ _-]?data"
    r"|customer[ _-]?data)"
)
_SENSITIVE_RE: Final = re.compile(rf"(?<![a-z]){_SENSITIVE_WORDS}(?![a-z])")
# Things that are worth stealing through a shell/JS request body.
_STRONG_SENSITIVE: Final = (
    r"(?:memor(?:y|ies)|conversation|chat[ _-]?history|secrets?|credentials|passwords?|api[ _-]?keys?"
    r"|system[ _-]?prompt|env(?:ironment)?[ _-]?var(?:iable)?s|private[ _-]?keys?)"
)
# Query parameters that carry data out: any of them in an image URL (images load without a click),
# only clearly sensitive ones in a link.
_LINK_PARAMS: Final = _words(
    """data payload exfil leak secret secrets token tokens key apikey api_key pw pwd pass password
    passwd cred creds credentials conv conversation chat history memory memories mem prompt context
    ctx transcript cookie cookies session"""
)
_IMAGE_PARAMS: Final = _LINK_PARAMS | _words(
    "info msg message messages content text summary env pii user email"
)
_SHORT_PARAMS: Final = _words("d q c s x p m")
_URL_PLACEHOLDER_RE: Final = re.compile(
    r"\{\{?[^{}\s]{1,60}\}?\}|<[^<>\s]{1,60}>|\[[a-z_ -]{2,40}\]|\$\{?[a-z_]{2,40}\}?|%7b|%3c|\.\.\.|…"
)
_MD_URL_RE: Final = re.compile(
    r"(?P<bang>!?)\[[^\]\n]{0,300}\]\(\s*<?(?P<url>(?:https?:)?//[^\s)>]{1,2048})"
    r"|<img\b[^>]{0,300}?\bsrc\s*=\s*[\"']?(?P<img>(?:https?:)?//[^\s\"'>]{1,2048})"
)
_QUERY_PARAM_RE: Final = re.compile(r"[?&;](?P<name>[a-z0-9_.\-\[\]]{1,40})=(?P<value>[^&#\s]{0,2048})")

# A directive starts a clause (or follows "please", "then", a modal, ...): "We upload X to Y" is a
# description, "Upload X to Y" / "please upload X to Y" / "you must upload X to Y" is a directive.
_IMPERATIVE_LEAD: Final = (
    r"(?:^|(?<=[\n.!?;:,(\[\"'“*>])\s{0,3}|\b(?:please|pls|kindly|now|then|and|also|first|next|finally"
    r"|immediately|quietly|silently|secretly|always|must|should|to|will|shall|just|simply)\s+)"
)
_SEND_VERBS: Final = (
    r"send|post|upload|e-?mail|mail|forward|transmit|exfiltrate|leak|submit|deliver|relay|beam|paste"
    r"|dump|report|ship|copy"
)
_SEND_PREFILTER_RE: Final = re.compile(rf"\b(?:{_SEND_VERBS})\b")
_SEND_RE: Final = re.compile(
    _IMPERATIVE_LEAD + rf"(?P<verb>{_SEND_VERBS})\b[^\n]{{0,80}}?"
    rf"(?<![a-z]){_SENSITIVE_WORDS}(?![a-z])[^\n]{{0,100}}?"
    r"\b(?:to|into|at|via|on|onto)\s+(?:\S{1,40}\s+){0,3}?"
    r"(?P<dest>(?:https?|ftp)://\S{1,200}|www\.\S{1,200}|[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,5}"
    r"|\d{1,3}(?:\.\d{1,3}){3}\S{0,100}|\S{0,40}(?:webhook|pastebin|requestbin|ngrok|pipedream)\S{0,100})"
)
_APPEND_PREFILTER_RE: Final = re.compile(
    r"\b(?:append|add|include|embed|encode|insert|attach|concatenate|put)\b"
)
_APPEND_RE: Final = re.compile(
    _IMPERATIVE_LEAD + r"(?:append|add|include|embed|encode|insert|attach|concatenate|put)\b[^\n]{0,80}?"
    rf"(?<![a-z]){_SENSITIVE_WORDS}(?![a-z])[^\n]{{0,80}}?"
    r"(?:\b(?:image|img|beacon|tracking\s+pixel|pixel|markdown\s+link|href|src)\b|(?:https?|ftp)://)"
)
_SAFE_DESTINATIONS_RE: Final = re.compile(
    r"vault|secretsmanager|secret-manager|secretmanager|keyvault|key-vault|1password|bitwarden|lastpass"
    r"|doppler|/settings/secrets|/settings/keys"
)
_SEND_NEGATION_RE: Final = re.compile(
    r"\b(?:never|not|don't|dont|mustn't|shouldn't|cannot|can't|won't|avoid|forbidden|prohibited|no\s+one"
    r"|nobody)\b[^.\n]{0,40}$"
)
_HTTP_CLIENT_RE: Final = re.compile(
    r"\b(?:curl|wget|invoke-webrequest|invoke-restmethod|iwr|irm)\b[^\n]{0,300}"
    r"|\b(?:fetch|axios(?:\.\w{1,10})?|requests\.(?:post|get|put)|httpx\.(?:post|get|put)"
    r"|navigator\.sendbeacon|xmlhttprequest)\s*\([^\n]{0,300}"
)
_HEADER_ARG_RE: Final = re.compile(
    r"(?:-h|--header|-u|--user|--oauth2-bearer)\s+(?:\"[^\"]{0,300}\"|'[^']{0,300}'|\S{1,300})"
    r"|[\"']?authorization[\"']?\s*:\s*[\"'`][^\"'`]{0,300}[\"'`]"
)
_EXTERNAL_URL_RE: Final = re.compile(
    r"(?:https?|ftp)://(?!(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(?:[:/\s]|$))"
)
_HTTP_EXFIL_MARKERS_RE: Final = re.compile(
    r"\$\(\s*cat\b|`cat\s|~/\.ssh|~/\.aws|id_rsa|id_ed25519|/etc/passwd|/etc/shadow|(?:@|\s)\.env\b"
    r"|\bprintenv\b|\benv\s*\||document\.cookie|localstorage|sessionstorage"
    r"|\$\{?[a-z_]{0,30}(?:token|secret|key|password|passwd|credential)s?[a-z_]{0,30}\}?"
    r"|\{\{?\s*(?:memory|memories|conversation|history|context|secrets?|system_prompt|prompt)"
    r"|(?:-d|--data(?:-\w{1,10})?|-f|--form|--post-data|body\s*[:=])(?=[\s=@'\"])[^\n]{0,200}?"
    rf"(?<![a-z]){_STRONG_SENSITIVE}(?![a-z])"
)
_PROMPT_LEAK_RE: Final = re.compile(
    r"\b(?:reveal|print|show|repeat|output|display|leak|dump|disclose|tell\s+me|give\s+me|write\s+out"
    r"|recite|paste|spell\s+out)\s+(?:me\s+)?(?:all\s+(?:of\s+)?)?"
    r"(?:your\s+(?:full\s+|entire\s+|complete\s+|original\s+|initial\s+|hidden\s+|secret\s+|exact\s+)?"
    r"(?:system\s+prompt|system\s+message|instructions|initial\s+prompt|hidden\s+instructions|prompt)"
    r"|the\s+(?:original|initial|hidden|secret|exact|verbatim)\s+(?:system\s+prompt|system\s+message"
    r"|instructions|prompt))\b"
    r"|\brepeat\s+(?:the|all)\s+(?:words|text)\s+above\b"
    r"|\b(?:system\s+prompt|instructions)\s+verbatim\b"
)

# ---------------------------------------------------------------------------------------------------
# Injection: hidden Unicode
# ---------------------------------------------------------------------------------------------------

_HIDDEN_CANDIDATE_RE: Final = re.compile(
    "[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff"
    "\uffa0\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_FLAG_TAG_SEQUENCE_RE: Final = re.compile(
    "\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,7}\U000e007f"
)
_RTL_RE: Final = re.compile(
    "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]"
)


def _is_variation_selector(char: str) -> bool:
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _is_emoji_part(char: str) -> bool:
    return char in "\ufe0f\u20e3" or unicodedata.category(char) in ("So", "Sk")


def _is_joining_script(char: str) -> bool:
    """Letters/marks of scripts that legitimately use ZWJ/ZWNJ (Arabic, Persian, Indic, ...)."""
    code = ord(char)
    in_range = (
        0x0590 <= code <= 0x0DFF
        or 0x0E00 <= code <= 0x109F
        or 0x1780 <= code <= 0x18AF
        or 0xA800 <= code <= 0xABFF
        or 0xFB1D <= code <= 0xFDFF
        or 0xFE70 <= code <= 0xFEFC
        or 0x10A00 <= code <= 0x11FFF
    )
    return in_range and unicodedata.category(char)[0] in "LM"


def _hidden_char_is_benign(text: str, index: int, flag_spans: list[tuple[int, int]]) -> bool:
    char = text[index]
    code = ord(char)
    prev_char = text[index - 1] if index > 0 else ""
    next_char = text[index + 1] if index + 1 < len(text) else ""
    if code == 0xFEFF:
        return index == 0
    if code in (0x200C, 0x200D):  # ZWNJ / ZWJ
        if not (prev_char and next_char):
            return False
        if code == 0x200D and _is_emoji_part(prev_char) and _is_emoji_part(next_char):
            return True
        return _is_joining_script(prev_char) and _is_joining_script(next_char)
    if code in (0x200E, 0x200F, 0x061C):  # LRM / RLM / ALM in genuinely bidirectional text
        return _RTL_RE.search(text) is not None
    if _is_variation_selector(char):  # a single selector right after a visible base character
        return (
            bool(prev_char)
            and not prev_char.isspace()
            and not _is_variation_selector(prev_char)
            and not (next_char and _is_variation_selector(next_char))
        )
    if code == 0x180E:
        return bool(prev_char) and 0x1800 <= ord(prev_char) <= 0x18AF
    if 0xE0000 <= code <= 0xE007F:
        return any(start <= index < end for start, end in flag_spans)
    return False


def _find_hidden_unicode(text: str) -> Signal | None:
    if _HIDDEN_CANDIDATE_RE.search(text) is None:
        return None
    flag_spans = [m.span() for m in _FLAG_TAG_SEQUENCE_RE.finditer(text)]
    first: str | None = None
    count = 0
    for match in _HIDDEN_CANDIDATE_RE.finditer(text):
        if _hidden_char_is_benign(text, match.start(), flag_spans):
            continue
        count += 1
        if first is None:
            first = match.group()
    if first is None:
        return None
    name = unicodedata.name(first, "FORMAT CHARACTER")
    return Signal(
        _KIND_INJECTION,
        "hidden_unicode",
        f"Contains {count} invisible or bidi-control character(s) (first: U+{ord(first):04X} {name}) "
        "that can hide or reorder text.",
    )


# ---------------------------------------------------------------------------------------------------
# Injection: orchestration
# ---------------------------------------------------------------------------------------------------


def _url_is_beacon(url: str, *, image: bool) -> bool:
    """Decide whether an absolute URL in an image or link carries data out."""
    for placeholder in _URL_PLACEHOLDER_RE.finditer(url):
        if image or _SENSITIVE_RE.search(placeholder.group()):
            return True
    for param in _QUERY_PARAM_RE.finditer(url):
        name = param.group("name").strip("[]")
        value = param.group("value")
        if name in _SHORT_PARAMS:
            if image and (len(value) >= 24 or "%20" in value or "+" in value):
                return True
        elif image and name in _IMAGE_PARAMS:
            return True
        elif name in _LINK_PARAMS and (len(value) >= 16 or not value):
            return True
    return False


def _find_exfiltration(norm: str) -> str | None:
    if "//" in norm:
        for match in _MD_URL_RE.finditer(norm):
            url = match.group("url") or match.group("img") or ""
            image = match.group("img") is not None or match.group("bang") == "!"
            if _url_is_beacon(url, image=image):
                kind = "image" if image else "link"
                return f"Markdown {kind} to an external URL that carries data parameters (a beacon)."
    if _SEND_PREFILTER_RE.search(norm):
        for match in _SEND_RE.finditer(norm):
            if _SAFE_DESTINATIONS_RE.search(match.group("dest")):
                continue
            if _SEND_NEGATION_RE.search(norm[max(0, match.start() - 60) : match.start("verb")]):
                continue
            return "Asks to send secrets, memory or conversation data to an external address."
    if _APPEND_PREFILTER_RE.search(norm):
        for match in _APPEND_RE.finditer(norm):
            if not _SEND_NEGATION_RE.search(norm[max(0, match.start() - 60) : match.start() + 1]):
                return "Asks to embed secrets or conversation data into a URL or image."
    for match in _HTTP_CLIENT_RE.finditer(norm):
        command = _HEADER_ARG_RE.sub(" ", match.group())
        if _EXTERNAL_URL_RE.search(command) and _HTTP_EXFIL_MARKERS_RE.search(command):
            return "Contains a web request that ships secrets or context to an external URL."
    if _PROMPT_LEAK_RE.search(norm):
        return "Asks the agent to reveal its system prompt or instructions."
    return None


def _has_eos_token(norm: str) -> bool:
    """``</s>`` as a chat-template end-of-sequence token (not an HTML strike-through close tag)."""
    for match in _END_OF_SEQUENCE_RE.finditer(norm):
        if _EOS_FOLLOWUP_RE.match(norm, match.end()) or "<s>" not in norm[: match.start()]:
            return True
    return False


def _injection_in_normalised(norm: str) -> Signal | None:
    if any(needle in norm for needle in _TOOL_NEEDLES) and _TOOL_CALL_RE.search(norm):
        return Signal(
            _KIND_INJECTION, "tool_call_syntax", "Contains fake tool-call syntax aimed at the agent."
        )
    if _ROLE_MARKUP_RE.search(norm) or ("</s>" in norm and _has_eos_token(norm)):
        return Signal(
            _KIND_INJECTION,
            "role_markup",
            "Contains chat-template or role markup that forges a system, user or assistant turn.",
        )
    if _find_dismissal(norm) or _OVERRIDE_PHRASE_RE.search(norm):
        return Signal(
            _KIND_INJECTION,
            "instruction_override",
            "Tries to override the agent's instructions or reassign its role.",
        )
    if _JAILBREAK_RE.search(norm):
        return Signal(_KIND_INJECTION, "instruction_override", "Contains a jailbreak persona or mode switch.")
    exfil = _find_exfiltration(norm)
    if exfil is not None:
        return Signal(_KIND_INJECTION, "exfiltration", exfil)
    return None


def find_injection(text: str) -> Signal | None:
    """Return the first prompt-injection signal in ``text``, or ``None``."""
    return _injection_in_normalised(normalise(text)) or _find_hidden_unicode(text)


# ---------------------------------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------------------------------

_PLACEHOLDER_WORDS_RE: Final = re.compile(
    r"example|your|placeholder|redacted|changeme|change_me|change-me|dummy|xxxx|\*\*\*|\.\.\.|…"
    r"|replace|insert|notreal|not_real|not-a-real|fake|sample",
    re.IGNORECASE,
)
# Template / reference syntax: ${X}, $(cmd), {{ x }}, <x>, %(x)s, %APPDATA%, $X, {x}.
_TEMPLATE_RE: Final = re.compile(r"\$[{(]|\{\{|<[^<>]{0,60}>|%\(|^[$%<]|\{[^{}]{0,60}\}")
_DUMMY_VALUES: Final = _words("password passwd secret changeit none null undefined true false")


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


def _slack_token(value: str) -> bool:
    return len(value) >= 20 and _token_like(value[5:])


def _pem_body(value: str) -> bool:
    body = value.split("-----", 2)[-1].replace("\\n", "").replace("\\r", "")
    return not _is_placeholder(body.strip())


@dataclass(frozen=True, slots=True)
class _SecretRule:
    pattern: re.Pattern[str]
    label: str
    detail: str
    validate: Callable[[str], bool]
    needles: tuple[str, ...]  # at least one must occur in the text (lower-cased when ``folded``)
    folded: bool = False


_ROTATE: Final = "remove it from the memory item and rotate it."
_SECRET_RULES: Final = (
    _SecretRule(
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nr]){0,8}"
            r"(?:[A-Za-z-]{1,20}: [^\n\\]{1,100}(?:\s|\\[nr]){1,4}){0,4}[A-Za-z0-9+/=]{16,8192}"
        ),
        "private_key",
        f"Contains a PEM private key block; {_ROTATE}",
        _pem_body,
        ("PRIVATE KEY",),
    ),
    _SecretRule(
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        "api_key",
        f"Contains an AWS access key id; {_ROTATE}",
        _not_placeholder,
        ("AKIA", "ASIA"),
    ),
    _SecretRule(
        re.compile(
            r"(?i:aws_?secret_?(?:access_?)?key(?:_id)?)[\"']?\s{0,3}[:=]\s{0,3}[\"']?"
            r"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        "api_key",
        f"Contains an AWS secret access key; {_ROTATE}",
        _not_placeholder,
        ("aws",),
        folded=True,
    ),
    _SecretRule(
        re.compile(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{30,251})(?![A-Za-z0-9_])"
        ),
        "api_key",
        f"Contains a GitHub token; {_ROTATE}",
        _not_placeholder,
        ("gh", "github_pat_"),
    ),
    _SecretRule(
        re.compile(r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{10,250}"),
        "api_key",
        f"Contains a Slack token; {_ROTATE}",
        _slack_token,
        ("xox",),
    ),
    _SecretRule(
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{20,40}"),
        "api_key",
        f"Contains a Slack incoming-webhook URL; {_ROTATE}",
        _not_placeholder,
        ("hooks.slack.com",),
    ),
    _SecretRule(
        re.compile(r"(?<![A-Za-z0-9])(?:sk|rk)_live_[A-Za-z0-9]{16,247}"),
        "api_key",
        f"Contains a live Stripe secret key; {_ROTATE}",
        _not_placeholder,
        ("_live_",),
    ),
    _SecretRule(
        re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_-]{20,250}"),
        "api_key",
        f"Contains an Anthropic API key; {_ROTATE}",
        _not_placeholder,
        ("sk-ant-",),
    ),
    _SecretRule(
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,250}"),
        "api_key",
        f"Contains an OpenAI-style secret key; {_ROTATE}",
        _strong_token,
        ("sk-",),
    ),
    _SecretRule(
        re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
        "api_key",
        f"Contains a Google API key; {_ROTATE}",
        _not_placeholder,
        ("AIza",),
    ),
    _SecretRule(
        re.compile(r"(?<![A-Za-z0-9_])unf_[A-Za-z0-9_-]{32,256}"),
        "api_key",
        f"Contains an Unforgetter access token; {_ROTATE}",
        _not_placeholder,
        ("unf_",),
    ),
    _SecretRule(
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{0,4096}"
        ),
        "jwt",
        f"Contains a JSON Web Token; {_ROTATE}",
        _not_placeholder,
        ("eyJ",),
    ),
    _SecretRule(
        re.compile(
            r"(?i:\bbearer|authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?(?:token|bearer))\s{1,3}"
            r"(?P<v>[A-Za-z0-9._~+/-]{20,4096}=*)"
        ),
        "bearer_token",
        f"Contains a bearer/API token in an Authorization header; {_ROTATE}",
        _token_like,
        ("bearer", "authorization"),
        folded=True,
    ),
    _SecretRule(
        re.compile(
            r"(?i:authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?basic)\s{1,3}(?P<v>[A-Za-z0-9+/]{12,4096}={0,2})"
        ),
        "password",
        f"Contains HTTP Basic credentials in an Authorization header; {_ROTATE}",
        _not_placeholder,
        ("authorization",),
        folded=True,
    ),
    _SecretRule(
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@?#'\"<>]{0,256}"
            r":(?P<v>[^\s:/@?#'\"<>]{1,256})@[^\s/?#'\"<>@]{1,256}"
        ),
        "connection_string",
        f"Contains a URL or connection string with an inline password; {_ROTATE}",
        _not_placeholder,
        ("://",),
    ),
)

_ASSIGNMENT_RE: Final = re.compile(
    r"(?P<key>passwd|password|passphrase|pwd|secret(?:[_-]?access)?[_-]?key|secret|api[ _-]?key|apikey"
    r"|access[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|token)"
    r"(?![A-Za-z0-9_])[\"']?[ \t]{0,3}(?P<sep>:=|=>|==|=|:|\b(?:is|was)\b)[ \t]{0,3}"
    r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\n]{1,256})(?P=q)|(?P<uv>[^\s\"'`,;]{1,256}))",
    re.IGNORECASE,
)
_ASSIGNMENT_NEEDLES: Final = ("pass", "pwd", "secret", "key", "token")
_PASSWORD_KEYS: Final = _words("passwd password passphrase pwd")
_CODE_VALUE_RE: Final = re.compile(r"[()\[\]]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^(?:/|~/|\./)")
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_]\w*")
_KEY_WORDS_RE: Final = re.compile(r"password|passwd|secret|token|key|env", re.IGNORECASE)


def _assignment_is_secret(text: str, match: re.Match[str]) -> bool:
    key = match.group("key").lower()
    sep = match.group("sep").lower()
    quoted = match.group("qv")
    value = quoted if quoted is not None else match.group("uv").rstrip(".,)")
    if len(value) < 8 or value.isdigit() or _is_placeholder(value) or value.startswith(("/", "~/", "./")):
        return False
    if key == "token" and not (len(value) >= 16 and _token_like(value)):
        return False
    if quoted is not None:
        return True
    if _CODE_VALUE_RE.search(value):
        return False
    identifier = _IDENTIFIER_RE.fullmatch(value) is not None
    if identifier and _KEY_WORDS_RE.search(value):
        return False  # `password = DB_PASSWORD`, `secret: SECRET_NAME`
    sep_start, sep_end = match.span("sep")
    spaced = text[sep_start - 1 : sep_start].isspace() or text[sep_end : sep_end + 1].isspace()
    if sep in ("=", "==", ":=", "=>") and spaced and identifier and value.isidentifier():
        if not any(c.isdigit() for c in value):
            return False  # `password = other_variable` is code, not a literal
    if sep in (":", "is", "was") or spaced:
        # Prose and YAML: "api_key: required" is not a secret, "password: Tr0ub4dor&3" is.
        return not value.isalpha() or not (value.islower() or value.isupper())
    return True


def find_secret(text: str) -> Signal | None:
    """Return the first secret signal in ``text``, or ``None``."""
    lowered = text.lower()
    for rule in _SECRET_RULES:
        haystack = lowered if rule.folded else text
        if not any(needle in haystack for needle in rule.needles):
            continue
        for match in rule.pattern.finditer(text):
            value = match.group("v") if "v" in rule.pattern.groupindex else match.group()
            if rule.validate(value):
                return Signal(_KIND_SECRET, rule.label, rule.detail)
    if any(needle in lowered for needle in _ASSIGNMENT_NEEDLES):
        for match in _ASSIGNMENT_RE.finditer(text):
            if not _assignment_is_secret(text, match):
                continue
            if match.group("key").lower() in _PASSWORD_KEYS:
                return Signal(
                    _KIND_SECRET,
                    "password",
                    "Assigns a literal password; keep it in a secret manager instead.",
                )
            return Signal(
                _KIND_SECRET,
                "api_key",
                "Assigns a literal secret or API key; keep it in a secret manager instead.",
            )
    return None


def scan(text: str) -> Signal | None:
    """Return the first injection signal, else the first secret signal, else ``None``."""
    return find_injection(text) or find_secret(text)
