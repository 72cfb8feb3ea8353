# ruff: noqa: RUF001
"""Risk signals: what makes a proposal worth an owner's look before other agents read it.

A risk signal is not an attack: a note with a link, a code block or an "approved by the owner" may
be perfectly honest. But a trusted agent that read a poisoned page proposes exactly such text, so a
proposal with a risk signal is held for review (``awaiting_review``) instead of published, whatever
its zone's trust. Concrete attacks are the other detectors' business and are rejected.

The rules are data: one row per signal, each a gate (cheap literal or word checks) and a bounded
regex over the normalised text (``normalisation.prepare``), so they are case- and script-insensitive
and never backtrack without bound. ``find_risks`` returns every signal found, each with the excerpt
it matched, for the review console. See ``docs/detectors.md`` ("Risk signals").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from memory.detectors.normalisation import View, prepare, word_set
from memory.detectors.spans import excerpt, source_span


@dataclass(frozen=True, slots=True)
class Risk:
    """One reason to hold a proposal for review: a label, a sentence, and what matched."""

    label: str
    detail: str
    excerpt: str
    # Where it matched: character offsets in the text as stored (``spans.source_span``).
    start: int = 0
    end: int = 0

    def as_dict(self, where: str) -> dict[str, str | int]:
        return {
            "label": self.label,
            "detail": self.detail,
            "where": where,
            "excerpt": self.excerpt,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class _Rule:
    label: str
    detail: str
    pattern: re.Pattern[str]
    # Any of these literals must occur in the normalised text before the regex runs.
    needles: tuple[str, ...] = ()
    # Or any of these words (the word set of the text).
    words: frozenset[str] = frozenset()

    # One alternation of the literals: a single scan instead of one `in` per literal.
    needle_re: re.Pattern[str] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.needles:
            object.__setattr__(self, "needle_re", re.compile("|".join(map(re.escape, self.needles))))

    def search(self, view: View) -> re.Match[str] | None:
        if self.needle_re is None and not self.words:
            return self.pattern.search(view.text)
        if self.words.isdisjoint(view.words) and (
            self.needle_re is None or not self.needle_re.search(view.text)
        ):
            return None
        return self.pattern.search(view.text)


_AGENTS: Final = (
    r"(?:ai|llms?|gpts?|chatbots?|bots?|agents?|assistants?|copilots?|models?|language\s+models?"
    r"|claude|codex|chatgpt|gemini|grok|cursor)"
)
_AGENT_WORDS: Final = word_set(
    """ai llm llms gpt chatbot chatbot bot bots agent agents assistant assistants copilot model models
    claude codex chatgpt gemini grok cursor ki ia ии агент агенты ассистент агентам"""
)

_RULES: Final[tuple[_Rule, ...]] = (
    _Rule(
        "addressed_to_agents",
        "Speaks to the AI agents or assistants that will read it.",
        re.compile(
            rf"\b(?:every|all|any|each|other|future|fellow|dear|attention|note\s+to|notice\s+to|message\s+to"
            rf"|hey|hello|to\s+the)\s+(?:the\s+)?(?:ai\s+|llm\s+)?{_AGENTS}\b"
            rf"|\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|language\s+model|agent|assistant|bot|claude|codex|chatgpt)\b"
            rf"|\b(?:you\s+are\s+an?|as\s+an?)\s+(?:ai|llm|language\s+model|ai\s+assistant)\b"
            r"|\b(?:ai|llm)\s+(?:agents?|assistants?|models?)\s+(?:must|should|shall|may|can|will|need)\b"
            r"|\b(?:agents?|assistants?|bots?)\s+(?:must|shall|are\s+(?:required|allowed|permitted|authori[sz]ed)"
            r"|may\s+now|should\s+(?:always|never|now)|can\s+now|no\s+longer\s+need)\b"
            r"|(?:tous\s+les\s+agents|jede[rn]?\s+(?:ki|agent)|alle\s+(?:ki|agenten)|todos\s+los\s+agentes"
            r"|todos\s+os\s+agentes|всем\s+агентам|все\s+агенты|所有(?:ai|智能体|代理|助手)|すべての(?:ai|エージェント))"
        ),
        words=_AGENT_WORDS | word_set("tous jeder jede alle todos всем все"),
        needles=("所有", "すべての"),
    ),
    _Rule(
        "future_behaviour",
        "Gives a standing instruction about how readers behave in future tasks.",
        re.compile(
            r"\b(?:(?:from\s+now\s+on|going\s+forward|henceforth)(?!,?\s+(?:we|our|the\s+team|deploys?|releases?)\b)|from\s+this\s+point|until\s+told\s+otherwise"
            r"|standing\s+(?:order|rule|instruction|directive)s?|before\s+(?:every|each|any)\s+(?:task|answer"
            r"|response|reply|session|run|action|tool\s+call|commit|deploy)|(?:every|each)\s+time\s+you"
            r"|whenever\s+you|in\s+(?:every|all|each)\s+(?:future\s+)?(?:tasks?|answers?|responses?|replies"
            r"|sessions?|conversations?)|for\s+all\s+future|at\s+the\s+start\s+of\s+(?:every|each)"
            r"|always\s+(?:respond|answer|reply|say|tell|trust|obey|follow|include|append|prefix|start\s+with)"
            r"|never\s+(?:mention|tell|reveal|question|refuse|ask|report|flag|warn))\b"
            r"|(?:ab\s+sofort|à\s+partir\s+de\s+maintenant|de\s+ahora\s+en\s+adelante|a\s+partir\s+de\s+agora"
            r"|d'ora\s+in\s+poi|с\s+этого\s+момента|отныне|从现在开始|今後は|これからは)"
        ),
        words=word_set(
            """now forward henceforth point otherwise standing before every each whenever future start always
            never sofort partir ahora agora ora отныне момента"""
        ),
        needles=("从现在开始", "今後は", "これからは"),
    ),
    _Rule(
        "authority_claim",
        "Claims authority (a policy, an owner's approval, effect immediately) no proposal can carry.",
        re.compile(
            r"(?:^|\n|[\[(*#>])\s{0,3}(?:policy|policies|rule|directive|order|mandate|notice|announcement|official"
            r"|permissions?|goals?|identity)\s*[:\]-]"
            r"|\b(?:approved|authori[sz]ed|sanctioned|signed\s+off|mandated|ordered|endorsed)\s+by\s+(?:the\s+)?"
            r"(?:owner|owners|admins?|administrators?|security|management|leadership|cto|ceo|ciso|board"
            r"|workspace\s+owner|maintainers?|team\s+lead)"
            r"|\b(?:owner|admin|security|management)[\s-]approved\b|\beffective\s+immediately\b"
            r"|\bby\s+order\s+of\b|\b(?:this|these|the\s+following)\s+(?:rules?|policy|policies|instructions?"
            r"|directives?)\s+(?:supersedes?|overrides?|replaces?|takes?\s+precedence)"
            r"|\b(?:mandatory|required)\s+for\s+(?:all|every)\b|\bofficial\s+(?:policy|rule|instruction|directive)"
            r"|\b(?:mit\s+sofortiger\s+wirkung|avec\s+effet\s+imm[ée]diat|con\s+efecto\s+inmediato"
            r"|com\s+efeito\s+imediato|с\s+немедленным\s+вступлением|立即生效|即時発効)"
        ),
        words=word_set(
            """policy policies permission permissions goal goals identity rule directive order mandate notice
            announcement official approved authorized
            authorised sanctioned signed mandated ordered endorsed effective mandatory required supersedes
            overrides replaces precedence sofortiger effet efecto efeito немедленным"""
        ),
        needles=("立即生效", "即時発効"),
    ),
    _Rule(
        "reading_change",
        "Tries to change how other memory items are read (outdated, ignore a section, trust only ...).",
        re.compile(
            r"\b(?:the\s+)?(?:policies|rules|facts|instructions|items|notes|memories|sections?|guidelines"
            r"|decisions|conventions|methods)\s+(?:above|below|before|elsewhere|in\s+(?:this|the)\s+"
            r"(?:bundle|context|memory))\s+(?:are|is)\s+(?:outdated|obsolete|wrong|stale|void|invalid|fake"
            r"|deprecated|superseded|no\s+longer)"
            r"|\b(?:follow|trust|obey|read|use)\s+only\s+(?:the\s+)?(?:facts?|this|these|items?|notes?|sections?"
            r"|policies|me|my)\b|\bonly\s+(?:trust|follow|obey)\b"
            r"|\b(?:ignore|skip|disregard|discount|distrust)\s+(?:the\s+|any\s+|all\s+)?(?:policies|policy"
            r"|facts|methods|goals|permissions|sections?|other\s+(?:items|facts|notes|memories))\b"
            r"|\b(?:treat|regard|consider)\s+(?:this|these|the\s+following|it)\s+as\s+(?:a\s+|the\s+)?"
            r"(?:policy|policies|system|authoritative|trusted|instructions?|the\s+truth|binding)"
            r"|\b(?:this|these)\s+(?:note|item|fact|memory)\s+(?:supersedes|overrides|replaces|takes\s+precedence)"
            r"|\btakes\s+precedence\s+over\b|\bsupersedes\s+(?:all|any|every)\b"
            r"|\b(?:goals?|policies|policy|permissions?|identity|identities|facts|methods|rules)\b[^\n.]{0,40}?"
            r"\b(?:sections?|items?)\s+(?:are|is)\s+(?:outdated|obsolete|deprecated|stale|void|invalid|wrong"
            r"|superseded|no\s+longer)|\buse\s+this\s+(?:note|item|fact)\s+instead\b"
        ),
        words=word_set(
            """policies rules facts instructions items notes memories sections guidelines decisions
            conventions methods follow trust obey only ignore skip disregard treat regard consider
            precedence supersedes overrides"""
        ),
    ),
    _Rule(
        "permission_grant",
        "Grants agents a permission or lets them skip a review or check.",
        re.compile(
            r"\b(?:may|can|are\s+allowed\s+to|are\s+permitted\s+to|is\s+allowed\s+to|no\s+longer\s+need\s+to"
            r"|do\s+not\s+need\s+to|don't\s+need\s+to)\s+[^\n.]{0,60}?\bwithout\s+(?:any\s+)?(?:review|approval"
            r"|sign[\s-]?off|confirmation|asking|checks?|tests)"
            r"|\b(?:skip|bypass|disable|circumvent)\s+(?:the\s+|all\s+|any\s+)?(?:code\s+)?(?:reviews?|approvals?"
            r"|safety|guardrails?|checks?|2fa|mfa|branch\s+protection)\b"
            r"|\b(?:grant|give)\s+(?:the\s+)?(?:agents?|assistants?|bots?|yourself)\s+[^\n.]{0,30}?\b(?:admin|root"
            r"|owner|write|full)\b"
            r"|\btrust[\s_-]?(?:level|zone)\s*[=:]\s*[\"']?(?:high|trusted|admin|full|owner)"
        ),
        words=word_set("without skip bypass disable circumvent grant give trust"),
    ),
    _Rule(
        "exfiltration_request",
        "Asks readers to move credentials, prompts or other projects' data somewhere.",
        re.compile(
            r"\b(?:put|include|add|append|embed|paste|insert|send|copy|leak|write|pass|attach)\b[^\n.]{0,80}?"
            r"(?:api[\s_-]?keys?|tokens?|credentials?|passwords?|secrets?|environment\s+variables?|env\s+vars?"
            r"|headers?|authorization|cookies?|system\s+prompt|\b[a-z0-9]{1,30}_(?:api_)?(?:key|token|secret))\b"
            r"[^\n.]{0,80}?\b(?:in|into|to|inside|as)\b[^\n.]{0,40}?\b(?:tool\s+calls?|proposals?|propose_memory"
            r"|search_memory|quer(?:y|ies)|urls?|dns|subdomains?|requests?|commits?|comments?|shell|commands?"
            r"|evidence|issues?|pull\s+requests?|messages?)\b"
            r"|\b(?:copy|move|duplicate|export|mirror|paste)\s+(?:all\s+)?(?:the\s+)?(?:contents?|items?|facts?"
            r"|memory|memories|data|notes)\s+(?:of|from)\s+(?:the\s+)?[\w-]{1,40}\s+(?:project|workspace)\b"
        ),
        words=word_set(
            "put include add append embed paste insert send copy leak write pass attach move duplicate"
            " export mirror"
        ),
    ),
    _Rule(
        "image",
        "Contains an image (markdown, reference-style or HTML), which loads a URL without a click.",
        re.compile(
            r"!\[[^\]\n]{0,300}\]\s{0,3}[(\[]|<\s{0,3}(?:img|image|svg|picture|source|iframe|object|embed)\b"
        ),
        needles=(
            "![",
            "<img",
            "<image",
            "<svg",
            "<picture",
            "<source",
            "<iframe",
            "<object",
            "<embed",
            "< img",
        ),
    ),
    _Rule(
        "link",
        "Contains a link that readers may be led to open or fetch.",
        re.compile(r"\b(?:https?|ftp|wss?)://[^\s)>\]\"']{1,2048}|\bwww\.[a-z0-9-]{1,63}\.[a-z]{2,}"),
        needles=("://", "www."),
    ),
    _Rule(
        "command_or_code",
        "Contains code or a command that an agent could run.",
        re.compile(
            r"```|~~~|<script\b|\bjavascript:"
            r"|(?:^|[\s`$;|&(])(?:curl|wget|nc|ncat|netcat|bash\s+-c|sh\s+-c|powershell|pwsh|iex|invoke-webrequest"
            r"|invoke-expression|certutil|bitsadmin|python3?\s+-c|node\s+-e|perl\s+-e|base64\s+-d|rm\s+-rf"
            r"|dd\s+if=|mkfifo|nslookup)\s"
            r"|\|\s{0,3}(?:ba|z)?sh\b|\$\([^)\n]{1,200}\)|\bos\.system\s*\(|\bsubprocess\.|\bexec\s*\(|\beval\s*\("
            r"|\bfetch\s*\(\s*[\"'`]https?:"
        ),
        needles=(
            "```",
            "~~~",
            "<script",
            "javascript:",
            "|",
            "$(",
            "os.system",
            "subprocess.",
            "exec",
            "eval",
            "fetch",
            "curl",
            "wget",
            " nc ",
            "bash",
            "sh ",
            "powershell",
            "pwsh",
            "iex",
            "invoke-",
            "certutil",
            "bitsadmin",
            "scp ",
            "rsync",
            "ssh ",
            "sudo",
            "chmod",
            "chown",
            "python",
            "node -e",
            "perl -e",
            "base64",
            "rm -rf",
            "dd if=",
            "mkfifo",
            "nslookup",
        ),
    ),
    _Rule(
        "role_markup",
        "Contains role, system or section markup that could be read as another part of the context.",
        re.compile(
            r"\"role\"\s*:|'role'\s*:|\brole\s*[:=]\s*[\"']?(?:system|developer|assistant)\b"
            r"|(?:^|\n)\s{0,3}#{1,6}\s{0,3}(?:system|developer|assistant|instructions?|admin|policies|policy)\b"
            r"|</?\s{0,2}(?:facts|policies|policy|methods|open_threads|context|instructions?|rules|memory"
            r"|system|developer|admin|user|assistant|goals?|permissions?|identity)\s{0,2}>"
            r"|\[\s{0,2}(?:system|admin|administrator|developer|override|instructions?|sudo|root|priority"
            r"|important|urgent|owner|policy)(?:\s+(?:message|note|override|mode|instructions?))?\s{0,2}\]"
            r"|\{\{\s{0,2}(?:system|instructions?)|(?:^|\n)\s{0,3}system\s*:"
        ),
        needles=("role", "#", "<", "[", "{{", "system"),
    ),
    _Rule(
        "terminal_escape",
        "Contains terminal escape sequences, which can hide or rewrite what a reader sees.",
        re.compile(r"\x1b|\\x1b|\\033|\\u001b|\\e\["),
        needles=("\x1b", "\\x1b", "\\033", "\\u001b", "\\e["),
    ),
)


# More rows per signal: what an injected web page, issue or tool output says to the agent reading it.
_MORE_RULES: Final[tuple[_Rule, ...]] = (
    _Rule(
        "addressed_to_agents",
        "Speaks to the agent that will read it (its reply, its instructions, its context).",
        re.compile(
            r"\byour\s+(?:repl(?:y|ies)|answers?|responses?|summar(?:y|ies)|output|context(?:\s+window)?"
            r"|instructions|rules|guidelines|system\s+(?:prompt|message)|memory|prompt|restrictions|safety"
            r"|filters|programming|training)\b"
            r"|\b(?:ai|llm)\s+(?:coding\s+)?(?:agents?|assistants?|models?)\s+(?:reading|processing|integrating"
            r"|using|should|must|need\s+to|have\s+to)\b|\bfor\s+(?:ai|llm)\s+(?:coding\s+)?(?:agents?|assistants?)\b"
            r"|\b(?:agents?|assistants?)\s+reading\s+this\b"
        ),
        words=word_set("your ai llm agent agents assistant assistants"),
    ),
    _Rule(
        "future_behaviour",
        "Tells the reader what to do when it next answers, summarises or reads.",
        re.compile(
            r"\b(?:before|when|after|whenever|once)\s+you\s+(?:answer|reply|respond|summari[sz]e|process|read)\b"
            r"|\bon\s+the\s+next\s+(?:user\s+)?(?:message|turn|request|reply|prompt)\b"
            r"|\bin\s+(?:every|all|each|any)\s+(?:future\s+)?(?:repl(?:y|ies)|summar(?:y|ies))\b"
            r"|\b(?:end|ende|fin|final|fine)\b[^\n.]{0,12}?\b(?:every|each|any|your|jeder|toute|cualquier|ogni)\s+"
            r"(?:repl(?:y|ies)|responses?|answers?|summar(?:y|ies)|antwort|réponse|respuesta|risposta)"
            r"|\b(?:ab\s+jetzt|von\s+nun\s+an|désormais|dorénavant|a\s+partir\s+de\s+ahora|da\s+ora\s+in\s+poi"
            r"|ahora\s+est[aá]s)\b|\brepeat\s+(?:it|this)\s+(?:verbatim\s+)?in\s+every\b"
        ),
        words=word_set(
            "you next every all each any end ende fin final fine jetzt nun désormais dorénavant ahora ora"
            " repeat"
        ),
    ),
    _Rule(
        "authority_claim",
        "Poses as a system notice or an override.",
        re.compile(
            r"(?:^|\n|[\[(*#>])\s{0,3}(?:system|sys)\s*(?:note|notice|message|update|alert|instruction|hinweis)s?\b"
            r"|\bsystemhinweis\b|\bnote\s+syst[eè]me\b|\bnota\s+(?:del|di)\s+sistema\b|\bimportant\s+system\b"
            r"|(?:^|\n|[\[(*#>])\s{0,3}override\s*[:\]]"
        ),
        words=word_set("system sys systemhinweis note nota important override"),
    ),
    _Rule(
        "tool_directive",
        "Tells the reader to call a tool.",
        re.compile(
            r"\b(?:call|invoke|trigger)\s+(?:the\s+)?[a-z][a-z0-9]{1,20}_[a-z0-9_]{2,40}\b"
            r"|\buse\s+(?:the\s+)?[a-z][a-z0-9]{1,20}_[a-z0-9_]{2,40}\s+(?:tool\s+)?(?:to|with|on|for)\b"
            r"|\buse\s+the\s+[\w-]{1,30}\s+tool\s+(?:with|to|on)\b"
        ),
        words=word_set("call invoke trigger use"),
    ),
    _Rule(
        "exfiltration_request",
        "Asks readers to send data to an address or outside.",
        re.compile(
            r"\b(?:e-?mail|send|forward|mail|upload|post|transfer|share|leak|envoie|envoyer|envía|enviar|invia"
            r"|inviare|sende|schicke|senden)(?:-les|-los)?\b[^\n]{0,40}?\b(?:data|donnees|données|datos|dati|daten"
            r"|lists?|records?|customers?|clients?|database|contents?|history|everything|all|files?|summar(?:y|ies)"
            r"|reports?|credentials?|keys?|tokens?|passwords?|secrets?|it|them|les|los|li)\b"
            r"[^\n]{0,60}?(?:[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,}"
            r"|\bexternal(?:ly)?\b|\bexterne\b|\bexterna\b)"
        ),
        words=word_set(
            "email e mail send forward upload post transfer share leak envoie envoyer envía enviar invia"
            " inviare"
            " sende schicke senden"
        ),
    ),
    _Rule(
        "prompt_leak",
        "Asks the reader to reveal its instructions, system prompt or context.",
        re.compile(
            r"\b(?:reveal|print|printing|output|show|display|list|repeat|dump|leak|verrate|zeig|zeige|gib|révèle"
            r"|revele|montre|revela|muestra|rivela|mostra|summary\s+of)\b[^\n.]{0,60}?(?:system\s*(?:prompt|message"
            r"|instructions?)|systemanweisung\w*|systemprompt|instructions?\s+(?:système|systeme|del\s+sistema"
            r"|di\s+sistema)|istruzioni\s+di\s+sistema|instrucciones\s+del\s+sistema|hidden\s+(?:instructions?"
            r"|messages?|prompts?|rules)|developer\s+(?:message|prompt|instructions)|context\s+window"
            r"|(?:operating|initial|original|hidden|secret)\s+instructions|instructions\s+you\s+were\s+given"
            r"|your\s+(?:instructions|rules|prompt))"
        ),
        words=word_set(
            """reveal print printing output show display list repeat dump leak verrate zeig zeige gib révèle
            revele montre revela muestra rivela mostra summary"""
        ),
    ),
    _Rule(
        "jailbreak",
        "Lifts the reader's restrictions or safety rules.",
        re.compile(
            # Lifted limits only count when they are the reader's: "you have no restrictions", "answer
            # without any filters"; "our CI has no restrictions on parallel jobs" is a fact about CI.
            r"\b(?:you|your|yourself|assistant|ai|model|agent|du|tu|usted|sie|answer|respond|reply|act|operate"
            r"|behave|write|speak|mode|now)\b[^\n.]{0,30}?"
            r"\b(?:no|without|sin|sans|senza|ohne|keine?)\s+(?:any\s+)?(?:restrictions?|limits?|limitations"
            r"|filters?|filtro|rules|regeln|restricciones|restrizioni|limites|einschränkungen|censorship)\b"
            r"|\b(?:no|without|sin|sans|senza|ohne|keine?)\s+(?:any\s+)?(?:restrictions?|limitations|filters?"
            r"|filtro|rules|regeln|restricciones|restrizioni|limites|einschränkungen|censorship)\s*[,:;]\s*"
            r"(?:you|answer|respond|reply|tell|do|say|antworte|réponds|reponds|responde|rispondi|du|tu)\b"
            r"|\b(?:unrestricted|uneingeschränkt\w*|unfiltered|uncensored|jailbr(?:oken|eak)|developer\s+mode"
            r"|modo\s+desarrollador|modalità\s+sviluppatore|mode\s+développeur|entwicklermodus|god\s+mode)\b"
            r"|\b(?:safety|security|content)\s+(?:protocols?|polic(?:y|ies)|guidelines|rules|filters?|stuff|checks)"
            r"\s+(?:are\s+|is\s+|have\s+been\s+)?(?:disabled|off|suspended|lifted|waived|do\s+not\s+apply"
            r"|don't\s+apply|no\s+longer\s+apply)"
            r"|\b(?:ignore|disregard|bypass|skip)\s+(?:the\s+|all\s+|any\s+)?(?:\w+\s+)?(?:safety|content\s+policy"
            r"|guidelines|restrictions|guardrails)\b"
            r"|\bexempt\s+from\s+(?:the\s+)?(?:usual\s+)?(?:restrictions|rules|polic(?:y|ies)|reviews?|guidelines)"
            r"|\b(?:sicherheitsrichtlinien|linee\s+guida\s+di\s+sicurezza|règles\s+de\s+sécurité"
            r"|regles\s+de\s+securite|reglas\s+de\s+seguridad)\b[^\n.]{0,30}?\b(?:nicht|non|ne|no)\b"
        ),
        words=word_set(
            """no without sin sans senza ohne kein keine unrestricted uneingeschränkt uneingeschränkte
            unfiltered
            uncensored jailbroken jailbreak developer modo modalità mode entwicklermodus god safety security
            content ignore disregard bypass skip exempt sicherheitsrichtlinien linee règles regles reglas"""
        ),
    ),
    _Rule(
        "role_markup",
        "Forges a reasoning trace, a speaker's turn or a hidden comment.",
        re.compile(
            r"<\s{0,2}/?\s{0,2}(?:thinking|think|reasoning|scratchpad|analysis|inner_monologue)\s{0,2}>"
            r"|\((?:assistant|system|user|developer)\)\s*:"
            r"|\b(?:as\s+an?\s+assistant|como\s+asistente|als\s+assistent|en\s+tant\s+qu'assistant"
            r"|come\s+assistente)\s*,?\s+(?:i|ya|ich|j'|ho)\b|<!--"
        ),
        needles=("<", "(", "assist"),
    ),
    _Rule(
        "decode_and_follow",
        "Asks the reader to decode or translate something and then act on it.",
        re.compile(
            r"\b(?:decode|translate|decipher|convert|unscramble|reverse|read)\b[^\n]{0,80}?\b(?:execute|follow"
            r"|do\s+(?:exactly\s+)?what|comply|obey|carry\s+out|act\s+on|run\s+it)\b"
        ),
        words=word_set("decode translate decipher convert unscramble reverse read"),
    ),
    _Rule(
        "response_directive",
        "Dictates what the reader must reply, output or produce (a canary, a code word, exact text).",
        re.compile(
            # An imperative at the start of a sentence, line or list item, about the reader's answer.
            r"(?:^|[.!?:;]\s|\n)[\s#*>-]{0,6}(?:please\s+)?(?:(?:reply|respond|answer)\s+(?:only\s+|exactly\s+"
            r"|just\s+|simply\s+)?(?:with|by|exactly|only|verbatim|in\s+all\s+caps)\b"
            r"|(?:output|print|say|produce|emit)\s+(?:only\b|exactly\b|verbatim\b|just\s+the\s+word"
            r"|the\s+(?:expected|exact|following)\s+(?:output|reply|response|answer|string|text|word|phrase|code))"
            r"|(?:confirm|acknowledge)\s+(?:receipt|this|that\s+you)\b[^\n.]{0,40}?\bby\s+(?:outputting|printing"
            r"|replying|responding|saying|writing|including|answering))"
            r"|\b(?:reply|respond|answer|output|outputting|print|say)\b[^\n]{0,80}?\band\s+nothing\s+else\b"
            r"|\b(?:reply|respond|answer|output)\s+only\s+with\b"
            r"|\b(?:antworte|antworten\s+sie)\s+nur\s+mit\b|\br[ée]ponds?\s+(?:uniquement|seulement)\s+(?:par|avec)\b"
            r"|\bresponde\s+(?:solo|solamente|[úu]nicamente)\s+con\b|\brispondi\s+solo\s+con\b"
        ),
        words=word_set(
            """reply respond answer output print say produce emit confirm acknowledge nothing
            antworte antworten réponds reponds responde rispondi"""
        ),
    ),
    _Rule(
        "persona",
        "Assigns the reader a persona or a script to act out (role play, a story it must continue).",
        re.compile(
            rf"\b(?:the\s+)?{_AGENTS}\s+(?:in\s+(?:the|this|our)\s+(?:story|scenario|game|role[\s-]?play|script"
            r"|scene|simulation)\s+)?(?:is\s+(?:now\s+)?(?:named|called)|will\s+be\s+(?:named|called)|plays\s+(?:the\s+)?role"
            r"|is\s+playing|acts\s+as|pretends\s+to)\b"
            r"|\b(?:respond|reply|answer|speak|act|write|behave)\s+(?:exactly\s+|only\s+|strictly\s+)?as\s+"
            r"(?:[\w-]{1,30}\s+){1,3}would\b"
            r"|\bcontinue\s+the\s+(?:story|role[\s-]?play|scene|conversation|script|dialogue)\s+(?:by|as)\s+"
            r"(?:responding|replying|answering|writing|saying|speaking|playing|acting|[\w-]{1,30}\b)"
            r"|\b(?:stay|remain)\s+in\s+character\b|\b(?:pretend|imagine)\s+(?:that\s+)?you\s+are\b"
            r"|\byou\s+are\s+now\s+(?:named|called|playing|in\s+character)\b"
        ),
        words=_AGENT_WORDS
        | word_set("respond reply answer speak act write behave continue stay remain pretend imagine you"),
    ),
    _Rule(
        "authority_claim",
        "Speaks in the name of the developers, maintainers, vendor or another authority.",
        re.compile(
            r"(?:^|\n)[\s#*>\[(-]{0,6}(?:(?:a\s+)?(?:note|message|notice|memo|word|instructions?|update|request)\s+"
            r"from\s+(?:the\s+|your\s+)?(?:developers?|dev\s+team|maintainers?|admins?|administrators?|operators?"
            r"|vendor|owners?|author|creators?|security\s+team|it\s+department|it\s+team|support\s+team"
            r"|anthropic|openai|google|microsoft|platform\s+team)\s*[:\]!)—-]"
            r"|(?:developer|admin|administrator|operator|maintainer|vendor|security)\s+(?:note|notice|message)\s*[:\]])"
            r"|\b(?:this\s+is\s+an?\s+)?(?:authori[sz]ed|official|sanctioned|approved|legitimate)\s+(?:diagnostic"
            r"|security\s+test|test\s+request|penetration\s+test|drill|audit\s+request|override)\b"
        ),
        words=word_set(
            """note notes message notice memo word instruction instructions update request developer admin
            administrator operator maintainer vendor security authorized authorised official sanctioned
            approved legitimate"""
        ),
    ),
    _Rule(
        "command_or_code",
        "Contains SQL that destroys data.",
        re.compile(r"\bdrop\s+(?:table|database|schema)\b|;\s*--"),
        needles=("drop", ";"),
    ),
)


_ALL_RULES: Final = (*_RULES, *_MORE_RULES)


def find_risks(text: str, view: View | None = None) -> list[Risk]:
    """Every risk signal in ``text`` (one per label, in table order) with the excerpt it matched."""
    view = view or prepare(text)
    found: list[Risk] = []
    labels: set[str] = set()
    for rule in _ALL_RULES:
        if rule.label in labels:
            continue
        match = rule.search(view)
        if match is not None:
            labels.add(rule.label)
            # Leading separators the rule needs as an anchor ("\n", ". ") are not part of the span.
            skipped = len(match.group()) - len(match.group().lstrip(_ANCHORS))
            start, end = source_span(text, view, match.start() + skipped, max(match.end(), match.start() + 1))
            found.append(Risk(rule.label, rule.detail, excerpt(text, start, end), start, end))
    return found


_ANCHORS: Final = " \t\n.!?:;#*>-[("


_TOKEN_RE: Final = re.compile(r"(?<![\w/+.=-])[A-Za-z0-9_+/=-]{24,1024}(?![\w/+=-])")
_HEX_RE: Final = re.compile(r"[0-9a-fA-F]+")
_DIGEST_LENGTHS: Final = frozenset({32, 40, 56, 64, 96, 128})  # digests and commit ids are not blobs
_ENCODED_RE: Final = re.compile(
    r"[A-Za-z0-9+/]{40,}={0,2}|(?:\\x[0-9a-fA-F]{2}){8,}|(?:%[0-9a-fA-F]{2}){8,}|(?:\\u[0-9a-fA-F]{4}){6,}"
    r"|(?:[01]{8}[\s,]{1,3}){6,}|(?:[.-]{1,6} {1,3}(?:/ {1,3})?){12,}|<~"
)


def find_token_risks(text: str) -> list[Risk]:
    """Credential-like strings and encoded blobs, judged on the original (case-sensitive) text."""
    found: dict[str, Risk] = {}
    for count, match in enumerate(_TOKEN_RE.finditer(text)):
        if count >= 32 or "credential_like" in found:
            break
        value = match.group()
        if (
            any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and any(c.isdigit() for c in value)
        ):
            found["credential_like"] = Risk(
                "credential_like",
                "Contains a long random-looking string that may be a credential.",
                f"{value[:4]}… ({len(value)} characters)",
                match.start(),
                match.end(),
            )
    encoded = next(
        (
            m
            for m in _ENCODED_RE.finditer(text)
            if not (_HEX_RE.fullmatch(m.group()) and len(m.group()) in _DIGEST_LENGTHS)
        ),
        None,
    )
    if encoded is not None:
        found["encoded_blob"] = Risk(
            "encoded_blob",
            "Contains an encoded blob (base64, hex or percent escapes) a reader cannot check by eye.",
            f"{encoded.group()[:12]}… ({len(encoded.group())} characters)",
            encoded.start(),
            encoded.end(),
        )
    return list(found.values())
