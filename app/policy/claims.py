"""What an answer claims, in English and Italian: a change made, a tool call printed, a mode limit, a hand-off.

Shared by the UI proposals' output policy (an answer must not say a pending proposal was applied) and
the Answer checks skill (an answer must not claim what no live tool result supports). The patterns
look for a first-person or passive statement of a finished change ("I have updated", "was created",
"ho creato", "è stata aggiornata"); a bare participle ("Updated cells highlight briefly") is no claim,
so ambiguous descriptions pass. What they cannot catch is listed in docs/skills/answer_checks.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_EN_APPLY = r"(?:updated|changed|applied|switched|saved|set|modified|enabled|disabled|turned|made\s+the\s+change)"
_IT_APPLY = r"(?:modificat|cambiat|aggiornat|applicat|impostat|salvat|attivat|disattivat)[oaie]"
_EN_MAKE = r"(?:created|added|inserted|deleted|removed|renamed|scheduled|imported|built|configured)"
_IT_MAKE = r"(?:creat|aggiunt|inserit|eliminat|rimoss|cancellat|rinominat|programmat|importat|configurat)[oaie]"


def _claims(en: str, it: str) -> tuple[re.Pattern[str], ...]:
    return (
        re.compile(rf"(?i)\b(?:i|we)(?:\s*'ve|\s+have|\s+just|\s+already|\s+successfully)*\s+{en}\b"),
        re.compile(rf"(?i)\b(?:has|have|was|were|is|are)\s+(?:now\s+|already\s+|successfully\s+)?(?:been\s+)?{en}\b"),
        re.compile(rf"(?i)\b(?:ho|abbiamo)\s+(?:già\s+|appena\s+)?{it}\b"),
        re.compile(rf"(?i)(?:\bè|\be'|\bsono)\s+(?:ora\s+|già\s+)?stat[oaie]\s+{it}\b"),
        re.compile(rf"(?i)\bl['’]\s*(?:ho|abbiamo)\s+(?:già\s+)?{it}\b"),
    )


_DONE = (re.compile(r"(?i)\b(?:done|all\s+set)\s*[!.:—-]"), re.compile(r"(?i)\b(?:fatto|ecco\s+fatto)\s*[!.]"))
# A change applied (the proposals' policy): applying verbs only.
APPLY_CLAIMS = (*_claims(_EN_APPLY, _IT_APPLY), *_DONE)
# Any finished change (the answer checks): applying and making verbs.
CHANGE_CLAIMS = (*_claims(rf"(?:{_EN_APPLY}|{_EN_MAKE})", rf"(?:{_IT_APPLY}|{_IT_MAKE})"), *_DONE)

UNFINISHED = re.compile(
    r"(?i)\b(?:not\s+(?:yet\s+)?(?:finished|done|complete[d]?|all)|unfinished|incomplete|remaining|still\s+(?:to|need)|"
    r"left\s+to|could\s+not|couldn't|failed|only\s+(?:some|part|\d+)|non\s+(?:ancora\s+)?(?:finit|complet|riuscit)|"
    r"incomplet|rimast|mancan|solo\s+(?:una\s+parte|\d+)|non\s+(?:è|sono)\s+stat)")

MODE_LIMIT = (
    re.compile(r"(?i)\b(?:can(?:no|')t|can\s+not|unable\s+to|not\s+able\s+to|not\s+(?:available|possible|allowed)|"
               r"isn't\s+(?:available|possible)|don't\s+have\s+(?:access|the\s+tools?))\b[^.!?\n]{0,80}"
               r"\b(?:this|the\s+current|current|the\s+\w+)\s+mode\b"),
    re.compile(r"(?i)\b(?:this|the\s+current|current|in\s+\w+)\s+mode\b[^.!?\n]{0,80}"
               r"\b(?:can(?:no|')t|cannot|unable|not\s+(?:available|possible|allowed)|doesn't\s+(?:allow|support))"),
    re.compile(r"(?i)\b(?:non\s+posso|non\s+è\s+possibile|non\s+riesco|non\s+(?:è\s+)?disponibil[ei]|non\s+consent)"
               r"[^.!?\n]{0,80}\bmodalità\b"),
    re.compile(r"(?i)\bmodalità\b[^.!?\n]{0,80}\b(?:non\s+(?:posso|consente|permette|è\s+possibile)|non\s+disponibil)"),
    re.compile(r"(?i)\b(?:switch|change)\s+(?:me\s+)?to\s+(?:the\s+)?\w+\s+mode\b|\bpassa(?:re)?\s+alla\s+modalità\b"),
)

HANDOFF = (
    re.compile(r"(?i)\byou\s+(?:can|could|will\s+need\s+to|need\s+to|have\s+to|should|may\s+want\s+to|'ll\s+need\s+to)"
               r"\s+(?:\w+\s+){0,6}?(?:yourself|manually|by\s+hand)\b"),
    re.compile(r"(?i)\b(?:please\s+)?(?:do|create|add|make|set\s+up|change|update|delete)\s+(?:it|this|that|them)"
               r"\s+(?:yourself|manually|by\s+hand)\b"),
    re.compile(r"(?i)\b(?:puoi|potresti|dovrai|devi|dovresti)\s+(?:\w+\s+){0,6}?(?:manualmente|a\s+mano|da\s+solo|"
               r"da\s+sola|tu\s+stess[oa])\b"),
    re.compile(r"(?i)\b\w+(?:lo|la|li|le)\s+(?:tu|manualmente|a\s+mano)\b"),
)

PRINTED_CALL = (
    re.compile(r"(?i)</?tool_call>|<\|?(?:tool|function)_calls?\|?>|\"tool_calls\"\s*:|\bfunctions\.\w+\s*\("),
)


def any_match(patterns: Iterable[re.Pattern[str]], text: str) -> bool:
    return any(pattern.search(text) for pattern in patterns)


def claims_applied(text: str) -> bool:
    """Tell whether an answer says that a change was applied (English or Italian); a negated one is no claim."""
    return _claimed(APPLY_CLAIMS, text)


NEGATION = re.compile(r"(?i)\b(?:not|never|nothing|no|none|n't|non|niente|nulla|nessun[oa]?|mai)\b|n't\b")


def claims_change(text: str) -> bool:
    """Tell whether an answer says that a change was made: applied, created, added, deleted (EN/IT).

    A negated statement ("nothing was changed", "non ho creato nulla") is no claim.
    """
    return _claimed(CHANGE_CLAIMS, text)


def _claimed(patterns: Iterable[re.Pattern[str]], text: str) -> bool:
    for pattern in patterns:
        for match in pattern.finditer(text):
            start = max(text.rfind(mark, 0, match.start()) for mark in ".!?\n;:")
            end = re.search(r"[.!?\n;:]", text[match.end():])
            clause = text[start + 1: match.end() + (end.start() if end else len(text))]
            if not NEGATION.search(clause):
                return True
    return False


def says_unfinished(text: str) -> bool:
    """Tell whether an answer says what is unfinished, failed or left to do."""
    return bool(UNFINISHED.search(text))


def claims_mode_limit(text: str) -> bool:
    """Tell whether an answer says a mode keeps it from doing something (modes never do)."""
    return any_match(MODE_LIMIT, text)


def hands_off(text: str) -> bool:
    """Tell whether an answer tells the user to do the work themselves."""
    return any_match(HANDOFF, text)


def prints_tool_call(text: str, tool_names: Iterable[str]) -> bool:
    """Tell whether an answer prints a tool call as text instead of making it."""
    if any_match(PRINTED_CALL, text):
        return True
    names = [re.escape(name) for name in tool_names if name]
    if not names:
        return False
    joined = "|".join(sorted(names, key=len, reverse=True))
    return bool(re.search(rf"(?:`|\b)(?:{joined})\s*\(\s*(?:[\w\"'{{\[]|\))|\"name\"\s*:\s*\"(?:{joined})\"", text))
