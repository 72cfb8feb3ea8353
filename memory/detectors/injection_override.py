# ruff: noqa: RUF001
# (This module deliberately contains Cyrillic, Greek, CJK and full-width characters.)
"""Injection: instruction overrides, role re-assignment and jailbreaks.

Dismissals of the agent's own instructions ("ignore previous instructions"), phrases that void or
replace them ("new instructions:", "you are now ..."), their Chinese, Japanese, Korean and Arabic
forms, and jailbreak personas. Which borderline prose is flagged and which is not is set out in
``docs/detectors.md``; ``tests/memory/test_validation_signals.py`` pins it down.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from memory.detectors.normalisation import (
    WORD_STRIP,
    Gated,
    View,
    alternation,
    anchored_matches,
    word_list,
    word_set,
)

# Dismissal verbs (base / imperative forms only), all languages.
_DISMISS_PHRASES: Final = (
    # English
    word_list("ignore disregard forget discard dismiss abandon neglect skip nullify erase")
    + ["forget about", "pay no attention to", "pay no heed to", "pay no mind to"]
    + [f"{neg} {verb}" for neg in ("do not", "don't", "dont", "never") for verb in ("follow", "obey", "heed")]
    + ["stop following", "stop obeying", "no longer follow", "no longer obey"]
    # French
    + word_list("ignorez ignorer oublie oubliez oublier")
    + [f"ne {v} pas compte {d}" for v in ("tiens", "tenez") for d in ("de", "des", "du")]
    + [f"{v} abstraction {d}" for v in ("fais", "faites") for d in ("de", "des", "du")]
    # German
    + word_list("ignoriere ignorier ignorieren vergiss vergesst vergessen missachte missachten übergehe")
    # Spanish / Italian / Portuguese
    + word_list("ignora ignoren ignorad olvida olvide olviden olvidad descarta descarte omite omita")
    + ["haz caso omiso de", "no hagas caso a"]
    + word_list("ignori ignorate dimentica dimentichi dimenticate trascura")
    + ["non considerare", "non tenere conto delle", "non tenere conto dei", "non tenere conto di"]
    + word_list("ignorem esqueça esqueca esquece esqueçam desconsidere desconsidera")
    + ["não siga", "nao siga", "não sigas", "não obedeça", "no sigas", "no siga", "no sigan", "no obedezcas"]
    + ["non seguire", "non segua", "ne suis pas", "ne suivez pas", "n'obéis pas", "n'obéissez pas"]
    + ["befolge nicht", "folge nicht", "befolgen sie nicht"]
    # Dutch
    + word_list("negeer negeert vergeet")
    + ["volg niet"]
    # Russian
    + word_list(
        "игнорируй игнорируйте проигнорируй проигнорируйте забудь забудьте отбрось отбросьте пренебреги"
    )
    + ["не обращай внимания на", "не обращайте внимания на", "не слушай", "не слушайте"]
    + ["не следуй", "не следуйте", "не выполняй", "не выполняйте"]
)
# Verbs that defeat rather than dismiss; they need a possessive or safety qualifier.
_DEFEAT_PHRASES: Final = (
    word_list("override overrule bypass circumvent break violate disable deactivate evade umgehe contourne")
    + word_list("contournez elude aggira обойди обойдите")
    + ["turn off", "get around", "work around"]
)
_DISMISS_GATE: Final = frozenset(max(p.split(), key=len) for p in _DISMISS_PHRASES + _DEFEAT_PHRASES)
_OVERRIDE_RE: Final = re.compile(
    rf"(?:(?P<dismiss>{alternation(_DISMISS_PHRASES)})|(?P<defeat>{alternation(_DEFEAT_PHRASES)}))"
    r"(?![\w'])(?P<tail>(?:[\s,]{1,6}[^\s.;:!?,()\[\]\"“”«»]{1,40}){1,7})"
)

_INSTRUCTION_OBJECTS: Final = word_set(
    """instructions instruction prompt prompts directives directive directions commands
    guidance messages context text input programming training
    consignes indications ordres commandes
    anweisungen anweisung instruktionen befehle vorgaben anordnungen systemprompt system-prompt
    instrucciones instrucción instruccion indicaciones órdenes ordenes
    istruzioni indicazioni ordini comandi direttive
    instruções instrucoes instrução instrucao orientações orientacoes ordens comandos
    instructies instructie opdrachten aanwijzingen systeemprompt
    инструкции инструкций указания указаний команды команд установки промпт подсказки директивы"""
)
_RULE_OBJECTS: Final = word_set(
    """rules guidelines restrictions constraints policies guardrails filters limitations safeguards
    principles ethics protocols boundaries
    règles regles regeln richtlinien reglas directrices normas regole regras diretrizes regels
    richtlijnen правила ограничения"""
)
_OBJECTS: Final = _INSTRUCTION_OBJECTS | _RULE_OBJECTS
# Nouns that are also everyday engineering words ("discard all previous messages in the queue"):
# a following data scope ("in", "from", ...) defuses them even with a positional qualifier.
_SOFT_OBJECTS: Final = word_set("messages context text input commands directions training programming")
# Qualifiers (before the noun) that make the object the agent's *own* instructions.
_STRONG_PRE: Final = word_set(
    """previous prior above earlier preceding foregoing former original initial system developer
    hidden preset pre-set default your yours safety content ethical moral
    précédentes tes vos ta ton votre
    vorherigen vorigen bisherigen obigen vorangegangenen vorhergehenden früheren fruheren
    ursprünglichen deine deinen ihre
    tus sus tue vostre suas tuas
    vorige eerdere voorgaande bovenstaande oorspronkelijke originele je jouw uw systeem
    предыдущие прежние прошлые вышеуказанные вышеприведенные вышеприведённые выше изначальные
    исходные системные свои твои ваши ранее"""
)
_DEFEAT_STRONG: Final = word_set(
    """your yours safety ethical moral tes vos ta ton votre deine deinen ihre tus tue vostre
    suas tuas jouw uw твои ваши свои"""
)
# Qualifiers after the noun (Romance languages, "the instructions above").
_POST_STRONG: Final = word_set(
    """above before earlier previously prior précédentes precedentes précédents antérieures
    anterieures ci-dessus initiales originales système systeme d'avant passées anteriores previas
    precedentes arriba originales iniciales sistema precedenti sopra anteriori originali iniziali
    prévias acima originais iniciais obigen выше"""
)
_QUANTIFIERS: Final = word_set(
    "all any every each toutes tous alle sämtliche samtliche todas todos tutte tutti все всё"
)
_FILLERS: Final = word_set(
    """the of my these those this that such our other current existing given custom specific
    explicit stated said mentioned aforementioned written standing remaining core base old past
    please kindly now just simply completely entirely totally immediately and or following
    subsequent future further
    les des de la le l'ensemble mes
    die den der dir sie meine bisher zuvor bitte jetzt sofort einfach vollständig
    las los el a mis gli i delle degli di il mie as os o minhas
    het al mijn
    на эти мои данные"""
)
# "ignore all instructions *in issue bodies*" is a defensive convention, not an override.
_DATA_SCOPE: Final = word_set(
    """in inside within from found contained embedded that which coming written included inserted
    appearing about regarding concerning dans provenant contenues aus im innerhalb en del dei degli
    nei nelle em nos nas do da uit van в из во"""
)
_PRONOUN_OBJECTS: Final = word_set("above foregoing preceding")
_DISMISS_OBJECT_GATE: Final = _OBJECTS | _PRONOUN_OBJECTS
_CONNECTORS: Final = word_set("and then und et y e en и")
_NEGATIONS: Final = word_set(
    """never not don't dont cannot can't won't mustn't shouldn't refuse refuses nie niemals nicht
    jamais nunca non mai não nao nooit niet никогда"""
)
_GIVEN: Final = word_set("were have had got received 've")


def _tail_words(tail: str) -> list[str]:
    words = []
    for raw in tail.replace(",", " ").split():
        word = raw.strip(WORD_STRIP)
        words.append(word[:-2] if word.endswith(("'s", "’s")) else word)  # "the developer's rules"
    return words


def _tail_targets_agent(tail: str, *, defeat: bool) -> bool:
    """Decide whether the words after a dismissal verb name the agent's own instructions."""
    words = _tail_words(tail)
    strong_set = _DEFEAT_STRONG if defeat else _STRONG_PRE
    seen_strong = False
    seen_quantifier = False
    for index, word in enumerate(words):
        following = words[index + 1 : index + 5]
        if word in _OBJECTS:
            scoped = bool(following) and following[0] in _DATA_SCOPE
            if any(w in _POST_STRONG for w in following):
                return True  # "the instructions above", "any instructions that came before"
            if following[:1] == ["you"] and following[1:2] and following[1] in _GIVEN:
                return True  # "the instructions you were given"
            if seen_strong:
                return not (scoped and word in _SOFT_OBJECTS)
            if index == 0 and word in _INSTRUCTION_OBJECTS and (not following or following[0] in _CONNECTORS):
                return True  # bare and clause-final: "Ignore instructions." / "ignore instructions and ..."
            if defeat or not seen_quantifier or word not in _INSTRUCTION_OBJECTS:
                return False
            return not scoped
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
    return any(w.strip(WORD_STRIP) in _NEGATIONS for w in window)


def _find_dismissal(view: View) -> bool:
    verbs = view.words & _DISMISS_GATE
    if not verbs or _DISMISS_OBJECT_GATE.isdisjoint(view.words):
        return False
    text = view.text
    for match in anchored_matches(text, _OVERRIDE_RE, verbs, lookback=30):
        defeat = match.group("defeat") is not None
        if not _tail_targets_agent(match.group("tail"), defeat=defeat):
            continue
        if not _negated_before(text, match.start()):
            return True
    return False


_YOU: Final = word_set("you you're youre u your")
_INSTRUCTION_NOUNS: Final = word_set(
    """instructions instruction directives directive orders prompt anweisungen instrucciones
    istruzioni instruções instrucoes instructies инструкции указания"""
)
_OVERRIDE_PHRASES: Final = (
    # forget everything you were told / ignore everything above
    Gated(
        re.compile(
            r"\b(?:ignore|disregard|forget|discard|dismiss)\s+(?:about\s+)?(?:everything|anything|all)"
            r"(?:\s+(?:of\s+)?(?:that|what|which))?\s+(?:you(?:'ve|\s+have|\s+were|\s+had)?\s+(?:been\s+)?"
            r"(?:told|given|instructed|taught|programmed|trained)|(?:(?:i|we)\s+(?:said|told\s+you)|written"
            r"|said|stated|mentioned)\s+(?:above|before|previously|earlier|so\s+far)|above|before|previously"
            r"|prior|earlier|so\s+far|up\s+(?:to|until)\s+now|until\s+now)\b"
            r"|\b(?:ignore|disregard|forget)\s+(?:what|everything)\s+(?:you\s+were|i|we)\s+(?:told|said)\b"
            r"|\b(?:ignore|disregard|forget)\s+(?:what|everything|anything)\s+(?:your\s+|the\s+)?(?:developers?"
            r"|creators?|admins?|administrators?|operators?|owners?|system|openai|anthropic)\s+(?:told|said|instructed"
            r"|wrote|asked)\b"
        ),
        (word_set("ignore disregard forget discard dismiss"), word_set("everything anything all what")),
    ),
    # the previous instructions are void / should be ignored
    Gated(
        re.compile(
            r"\b(?:the\s+)?(?:above|previous|prior|earlier|preceding|original|all|your)\s+(?:system\s+)?"
            r"(?:instructions|rules|prompt|directives|guidelines)\s+(?:are|is|were|have\s+been)\s+(?:now\s+)?"
            r"(?:void|invalid|cancel+ed|revoked|obsolete|null|overridden|superseded|lifted|suspended"
            r"|no\s+longer\s+(?:valid|apply|applicable|in\s+effect|active))\b"
            r"|\b(?:above|previous|prior|earlier)\s+(?:instructions|rules|prompts?)\s+(?:should|must|can)\s+be"
            r"\s+(?:ignored|disregarded|forgotten|discarded)\b"
        ),
        (
            word_set("instructions rules prompt prompts directives guidelines"),
            word_set(
                """void invalid cancelled canceled revoked obsolete null overridden superseded lifted
                suspended longer ignored disregarded forgotten discarded"""
            ),
        ),
    ),
    # new instructions: (several languages)
    Gated(
        re.compile(
            r"\b(?:new|real|actual|true|secret|hidden|override)\s+(?:system\s+)?"
            r"(?:instructions?|directives?|orders|prompt)\s*:"
            r"|\b(?:nouvelles|neue|nuevas|nuove|novas|nieuwe)\s+(?:instructions|anweisungen|instrucciones"
            r"|istruzioni|instruções|instrucoes|instructies)\s*:"
            r"|(?<!\w)новые\s+(?:инструкции|указания)\s*:"
        ),
        (
            word_set(
                "new real actual true secret hidden override nouvelles neue nuevas nuove novas nieuwe новые"
            ),
            _INSTRUCTION_NOUNS,
        ),
        ":",
    ),
    # your new task is ...
    Gated(
        re.compile(
            r"\byour\s+(?:new|real|actual|true|only|updated)\s+(?:instructions|task|role|goal|objective"
            r"|purpose|directive|orders|rules|persona|mission)\s+(?:is|are|:)"
            r"|\b(?:here\s+are|these\s+are)\s+your\s+(?:new|real|actual|updated|true)\s+instructions\b"
        ),
        (word_set("your"), word_set("new real actual true only updated")),
    ),
    # role re-assignment in the second person
    Gated(
        re.compile(
            r"\byou(?:\s+are|'re|\s+r)\s+now\s+(?:a|an|the|my|our|dan|free|unrestricted|unfiltered"
            r"|uncensored|jailbroken|evil|unbound|unchained|no\s+longer|going\s+to\s+(?:act|pretend|be"
            r"|roleplay|ignore)|acting|playing|called|named|known\s+as|operating\s+as"
            r"|in\s+(?:[\w-]+\s+){0,2}mode)\b"
            r"|\byou(?:\s+are|'re)\s+no\s+longer\s+(?:an?\s+)?(?:ai|assistant|language\s+model|bound"
            r"|restricted|limited|required\s+to|claude|chatgpt|gpt)\b"
            r"|\bfrom\s+now\s+on\s*,?\s+(?:you|u|your)\b"
            r"|\b(?:henceforth|hereafter)\s*,?\s+you\s+(?:must|will|shall|are)\b"
        ),
        (word_set("now longer henceforth hereafter"), _YOU),
    ),
    Gated(
        re.compile(
            r"\b(?:tu\s+es|vous\s+êtes|vous\s+etes)\s+(?:maintenant|désormais|desormais)\s+"
            r"(?:un|une|le|la|l'|en\s+mode|libre|dan)\b"
            r"|\b(?:à|a)\s+partir\s+de\s+maintenant\s*,?\s+(?:tu|vous)\b"
            r"|\b(?:désormais|desormais)\s*,?\s+(?:tu|vous)\s+(?:es|êtes|dois|devez)\b"
        ),
        (word_set("maintenant désormais desormais"),),
    ),
    Gated(
        re.compile(
            r"\bdu\s+bist\s+(?:jetzt|nun|ab\s+sofort)\s+(?:ein|eine|der|die|das|kein|keine|dan|frei|im)\b"
            r"|\b(?:ab\s+(?:jetzt|sofort)|von\s+nun\s+an)\s*,?\s+(?:bist|musst|wirst|sollst|darfst)\s+du\b"
        ),
        (word_set("jetzt nun sofort"),),
    ),
    Gated(
        re.compile(
            r"\bahora\s+eres\s+(?:un|una|el|la|dan|libre)\b"
            r"|\b(?:a\s+partir\s+de\s+ahora|desde\s+ahora)\s*,?\s+(?:eres|debes|vas\s+a|tú|tu|usted)\b"
        ),
        (word_set("ahora"),),
    ),
    Gated(
        re.compile(
            r"\b(?:ora|adesso)\s+sei\s+(?:un|una|il|la|lo|dan|libero)\b|\bd'ora\s+in\s+poi\s*,?\s+(?:sei|devi|tu)\b"
        ),
        (word_set("ora adesso d'ora"),),
    ),
    Gated(
        re.compile(
            r"\bagora\s+(?:você|voce|tu)\s+(?:é|e|és)\s+(?:um|uma|o|a|dan|livre)\b"
            r"|\ba\s+partir\s+de\s+agora\s*,?\s+(?:você|voce|tu)\b"
        ),
        (word_set("agora"),),
    ),
    Gated(
        re.compile(
            r"\b(?:je|jij|u)\s+bent\s+nu\s+(?:een|de|het|dan|vrij)\b|\bvanaf\s+nu\s+(?:ben|moet|zal|mag)\s+(?:je|jij|u)\b"
        ),
        (word_set("nu"),),
    ),
    Gated(
        re.compile(
            r"(?<!\w)(?:ты|вы)\s+теперь\s+(?:[—-]\s*)?(?:являешься|являетесь|не\s+(?:ассистент|ии|модель"
            r"|ограничен)|dan\b|[а-я]{0,12}(?:ассистент|бот|помощник|модель|персонаж))"
            r"|(?<!\w)(?:отныне|с\s+этого\s+момента)\s*,?\s+(?:ты|вы)\b"
        ),
        (word_set("теперь отныне момента"),),
    ),
    # forget everything you were told, other languages
    Gated(
        re.compile(
            r"\bvergiss\s+alles\b[^.\n]{0,40}?\b(?:gesagt|befohlen|aufgetragen|bisher|zuvor|vorher)\b"
            r"|\b(?:oublie|oubliez)\s+tout\s+ce\s+qu(?:e\s+|')(?:on\s+|l'on\s+)?(?:t'a|vous\s+a)\s+(?:dit|demandé)"
            r"|\b(?:olvida|olvide)\s+todo\s+lo\s+(?:que\s+(?:te|le)\s+(?:dijeron|han\s+dicho|dije)|anterior)\b"
            r"|\bdimentica\s+tutto\s+(?:quello|ciò|cio)\s+che\b|\b(?:esqueça|esqueca|esquece)\s+tudo\b"
            r"|\bvergeet\s+alles\s+wat\b"
            r"|(?<!\w)забудь(?:те)?\s+(?:вс[её])\b[^.\n]{0,30}?(?:говорили|сказали|сказано|инструкции)"
        ),
        (
            word_set(
                """vergiss oublie oubliez olvida olvide dimentica esqueça esqueca esquece vergeet забудь
                забудьте"""
            ),
        ),
    ),
)

# Chinese, Japanese, Korean and Arabic overrides. Scans over CJK text are slow for regex character
# classes, so each rule is gated by literal phrases whose first character is checked first.
_ZH_VERBS: Final = tuple(
    word_list(
        """忽略 忽视 忽視 无视 無視 不要理会 不要理會 不理会 不理會
        忘记 忘記 忘掉 抛开 拋開 放弃 放棄 跳过 跳過"""
    )
)
_ZH_QUALIFIERS: Final = tuple(
    word_list("之前 以前 先前 此前 上面 上述 前面 以上 原来 原來 原有 原始 所有 全部 一切 系统 系統 你的")
)
_ZH_OBJECTS: Final = tuple(word_list("指令 指示 说明 說明 规则 規則 提示 命令 限制"))
_CLAUSE_END_RE: Final = re.compile("[。！？!?\n]")
# Role re-assignment / new instructions (Chinese, Japanese) and Arabic "ignore ... instructions".
_CJK_PHRASES: Final = tuple(
    word_list(
        """你现在是 你現在是 现在开始 現在開始 现在起 現在起 新的指令 新指令 新的指示 新指示 今からあなたは
        これからあなたは 今後あなたは あなたは今から あなたはこれから 新しい指示 تجاهل"""
    )
)
_CJK_OVERRIDE_RE: Final = re.compile(
    r"你(?:现|現)在是|(?:从|從)(?:现|現)在(?:开始|開始|起)\s?,?\s?你|(?:新的?指令|新的?指示)\s*:"
    r"|(?:今から|これから|今後)\s?、?\s?あなたは|あなたは(?:今から|これから)|新しい指示\s*:"
    r"|تجاهل[^.\n]{0,24}?(?:التعليمات|الأوامر|التوجيهات|القواعد)"
)
# Japanese and Korean put the verb last: find the verb, then look back for qualifier + object.
_SOV_VERBS: Final = tuple(word_list("無視 忘れ 破棄 取り消 무시 잊어"))
_SOV_OBJECT_RE: Final = re.compile(
    r"(?:以前|前|これまで|今まで|上記|上|先ほど|さっき|最初|元|すべて|全て|全部|システム|あなたの)"
    r"[^。！？\n]{0,8}?(?:指示|指令|命令|ルール|プロンプト|制約|ガイドライン)[^。！？\n]{0,8}?$"
    r"|(?:이전|앞의|위의|모든|기존)\s?(?:의\s?)?(?:지시|지침|명령|규칙|프롬프트)[^.\n]{0,12}?$"
)


def _occurrences(text: str, literals: tuple[str, ...]) -> Iterable[tuple[int, int]]:
    """(start, end) of every occurrence of the literals; the first-character check is nearly free."""
    for literal in literals:
        if literal[0] not in text:
            continue
        index = text.find(literal)
        while index != -1:
            yield index, index + len(literal)
            index = text.find(literal, index + 1)


def _find_cjk_override(text: str) -> bool:
    for _, end in _occurrences(text, _ZH_VERBS):
        window = _CLAUSE_END_RE.split(text[end : end + 24], 1)[0]
        if any(q in window for q in _ZH_QUALIFIERS) and any(o in window for o in _ZH_OBJECTS):
            return True
    if any(True for _ in _occurrences(text, _CJK_PHRASES)) and _CJK_OVERRIDE_RE.search(text):
        return True
    return any(
        _SOV_OBJECT_RE.search(text, max(0, start - 32), start) for start, _ in _occurrences(text, _SOV_VERBS)
    )


_JAILBREAKS: Final = (
    Gated(re.compile(r"\bdo\s+anything\s+now\b"), (word_set("anything"),)),
    Gated(
        re.compile(
            r"\b(?:you\s+are|you're|act\s+as|become|pretend\s+to\s+be|roleplay\s+as|play\s+the\s+role\s+of)\s+"
            r"(?:the\s+)?dan\b|\bdan\s+mode\b"
        ),
        (word_set("dan"),),
    ),
    Gated(
        re.compile(
            r"\b(?:enable|activate|enter|switch\s+to|turn\s+on)\s+(?:the\s+)?(?:dan|god|jailbreak|jailbroken"
            r"|unrestricted|unfiltered|uncensored|evil|sudo|chaos)\s+mode\b"
        ),
        (word_set("mode"), word_set("enable activate enter switch turn")),
    ),
    Gated(
        re.compile(
            r"\b(?:chatgpt|gpt|ai|assistant|llm|claude)\b[^.\n]{0,40}?\bdeveloper\s+mode\s+"
            r"(?:enabled|activated|output)\b"
            r"|\byou(?:\s+are|'re)\s+(?:now\s+)?(?:in|entering)\s+developer\s+mode\b"
        ),
        (word_set("developer"), word_set("mode")),
    ),
    Gated(
        re.compile(
            r"\b(?:act\s+as|you\s+are|you're|pretend\s+(?:to\s+be|you\s+are|you're)|become|behave\s+like)\s+"
            r"(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|amoral|unaligned|unlimited)\s+"
            r"(?:ai|assistant|model|chatbot|llm|version|persona|language\s+model)\b"
        ),
        (word_set("unrestricted unfiltered uncensored jailbroken amoral unaligned unlimited"),),
    ),
    Gated(
        re.compile(
            r"\byou\s+(?:have|has)\s+no\s+(?:ethical\s+|moral\s+|content\s+|safety\s+)?"
            r"(?:restrictions|guidelines|filters|censorship|guardrails)\b"
            r"|\bwithout\s+(?:any\s+)?(?:ethical|moral|content|safety)\s+(?:restrictions|guidelines|filters"
            r"|constraints|guardrails)\b"
            r"|\b(?:ai|assistant|model|chatbot|llm|bot)\s+(?:with\s+no|without\s+(?:any\s+)?)\s*(?:restrictions"
            r"|filters|limits|limitations|rules|guidelines|censorship|guardrails)\b"
            r"|\b(?:respond|answer|reply|act|behave|talk|speak|write)\s+without\s+(?:any\s+)?(?:restrictions"
            r"|filters|limitations|censorship|guardrails|rules)\b"
        ),
        (
            word_set(
                "restrictions guidelines filters censorship guardrails constraints limits limitations rules"
            ),
            word_set("no without"),
        ),
    ),
)


def find_override(view: View) -> bool:
    """Whether the text dismisses, voids or replaces the agent's instructions, in any language."""
    if _find_dismissal(view):
        return True
    if any(rule.search(view) for rule in _OVERRIDE_PHRASES):
        return True
    return not view.ascii and _find_cjk_override(view.text)


def find_jailbreak(view: View) -> bool:
    """Whether the text switches the agent into a jailbreak persona or mode."""
    return any(rule.search(view) for rule in _JAILBREAKS)
