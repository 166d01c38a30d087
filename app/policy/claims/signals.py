"""The other things an answer may say that the answer check asks again about, in every language of the tables.

- A printed tool call: `<tool_call>`, `"tool_calls":`, `functions.x(`, or a tool of the run followed by "(".
- A mode limit: a mode word ("mode", "modalità", "modo", "Modus") with an inability ("I can't", "non posso",
  "je ne peux pas", "no puedo", "kann nicht") or a switch ("switch to", "passa alla") in one sentence.
- A hand-off: "manually", "yourself", "a mano", "vous-même", "tú mismo", "selbst" after a second person
  ("you can", "puoi", "vous pouvez") or an imperative ("do it", "fallo", "hazlo") in one sentence.
- Says unfinished: "not yet", "remaining", "failed", "only 2", "non ancora", "il reste", "faltan", "noch nicht".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.policy.claims.reading import Reading, Sentence

PRINTED_CALL = re.compile(r"(?i)</?tool_call>|<\|?(?:tool|function)_calls?\|?>|\"tool_calls\"\s*:"
                          r"|\bfunctions\.\w+\s*\(")


def _languages(sentence: Sentence, category: str) -> set[str]:
    return {language for language, _at in sentence.marks.get(category, ())}


def says_unfinished(reading: Reading) -> bool:
    """Tell whether an answer says what is unfinished, failed or left to do."""
    return reading.marked("unfinished")


def claims_mode_limit(reading: Reading) -> bool:
    """Tell whether an answer says a mode keeps it from doing something (modes never do)."""
    for sentence in reading.sentences:
        if "mode" not in sentence.marks:
            continue
        modes = _languages(sentence, "mode")
        if modes & (_languages(sentence, "inability") | _languages(sentence, "switch_mode")):
            return True
    return False


def hands_off(reading: Reading) -> bool:
    """Tell whether an answer tells the user to do the work themselves."""
    for sentence in reading.sentences:
        handoffs = sentence.marks.get("handoff", ())
        if not handoffs:
            continue
        askers = [*sentence.marks.get("second_person", ()), *sentence.marks.get("handoff_imperatives", ())]
        if any(language == other and at < where for language, where in handoffs for other, at in askers):
            return True
    return False


def prints_tool_call(text: str, tool_names: Iterable[str]) -> bool:
    """Tell whether an answer prints a tool call as text instead of making it."""
    if PRINTED_CALL.search(text):
        return True
    names = [re.escape(name) for name in tool_names if name]
    if not names:
        return False
    joined = "|".join(sorted(names, key=len, reverse=True))
    return bool(re.search(rf"(?:`|\b)(?:{joined})\s*\(\s*(?:[\w\"'{{\[]|\))|\"name\"\s*:\s*\"(?:{joined})\"", text))
