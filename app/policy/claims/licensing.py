"""When a finished verb form claims a change: what licenses it in its clause, and what makes it no claim.

Licensed by a perfect auxiliary with the speaker as subject ("I have", "ho", "j'ai", "he", "ich habe"), a
passive ("was", "è stata", "a été", "fue", "wurde"; English "is"/"are" only with "now", "already"), a
first-person subject before a simple past ("I created", "creé"), the clause it is coordinated with, or a
telegraphic or status position ("Created the table Contacts", "Table Contacts created", "- Contacts: created").
Not a claim: after an infinitive marker ("to set"), under a negation of its clause (carried by "or"/"and"
from the clause it is coordinated with), a modal, a condition, the user's request, a question, or a habit.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.policy.claims.lexicon import Lexicon
from app.policy.claims.reading import Clause, Unit
from app.policy.claims.things import kind_of

AUXILIARIES = ("passive", "state_passive", "adverb_passive", "perfect_first", "perfect", "pluperfect")
BLOCKERS = ("modal", "request", "conditional")
NP_WORDS = ("determiners", "new", "everything", "state_adverbs")
AFTER_WORDS = ("prepositions", "determiners", "with", "state_adverbs", "new", "everything")
STATUS_MARKS = (":", "|", "-")


@dataclass
class Licence:
    form: str
    """active, passive, telegraphic or status."""
    language: str
    negated: bool = False
    earlier: bool = False
    person: str | None = None


def licence(lexicon: Lexicon, clause: Clause, verb: int, language: str, form: str,
            context: Licence | None) -> Licence | None:
    """Return what makes the verb at `verb` a claim of a finished change, or None."""
    if clause.question or clause.hypothetical:
        return None
    units = clause.units
    grammar = lexicon.languages[language]

    def cats(index: int) -> dict:
        return units[index].cats(language)

    if verb > 0 and "infinitive" in cats(verb - 1):
        return None
    aux: dict[str, int] = {}
    subjects: list[tuple[int, str]] = []
    for index in range(verb - 1, -1, -1):
        here = cats(index)
        if not here:
            continue
        for kind in AUXILIARIES:
            if kind in here and kind not in aux and verb - index <= grammar.window:
                aux[kind] = index
        if "first_person" in here or form == "past" and "past_subjects" in here:
            subjects.append((index, "first"))
        elif "other_persons" in here:
            subjects.append((index, "other"))
    anchor = min((aux[k] for k in ("perfect_first", "perfect", "pluperfect") if k in aux), default=verb)
    person, start = None, 0
    for index, who in subjects:  # nearest first
        if index < anchor:
            person, start = who, index
            break
    if person is None:
        person = next((who for index, who in subjects if index == anchor + 1), None)
    region = range(start, verb)
    used = set(aux.values())
    negated = any("negation" in cats(i) for i in region)
    negated |= any("object_negation" in cats(i) for i in range(verb + 1, min(verb + 3, len(units))))
    if any(any(b in cats(i) for b in BLOCKERS) for i in region if i not in used):
        return None
    earlier = "pluperfect" in aux
    adverb = any("state_adverbs" in cats(i) for i in range(len(units)))
    found = None
    if form == "first_person_past" and person != "other":
        found = "active"
    elif "passive" in aux or "state_passive" in aux or "adverb_passive" in aux and adverb:
        found = "passive"
    elif "perfect_first" in aux and person != "other":
        found = "active"
    elif ("perfect" in aux or "pluperfect" in aux) and person == "first":
        found = "active"
    elif (form == "past" or form == "done" and grammar.past_is_done) and person == "first" and (
            verb - next(i for i, who in subjects if who == "first") <= grammar.window):
        found = "active"
    if found is None and not aux and person is None and clause.joint in ("and", "or", ",") and (
            context is not None and context.language == language):
        found, negated = context.form, negated or context.negated
    if found is None and person != "other":
        found = _telegraphic(clause, verb, language)
        if found and ("habitual" in cats(verb) or any("habitual" in cats(i) for i in range(len(units)))):
            found = None
    if found is None:
        return None
    if found == "passive" and any("habitual" in cats(i) for i in range(len(units))):
        return None
    return Licence(found, language, negated, earlier, person)


def _content(clause: Clause, language: str) -> list[int]:
    return [i for i, u in enumerate(clause.units)
            if not (u.kind == "p" or "state_adverbs" in u.cats(language))]


def _telegraphic(clause: Clause, verb: int, language: str) -> str | None:
    """Return "telegraphic" or "status" for a verb without subject or auxiliary in those positions."""
    units = clause.units
    content = _content(clause, language)
    if not content:
        return None
    here = units[verb].cats(language)
    if "data_statuses" in here:
        return None  # "Order 12: delivered": a status of data
    rest = [i for i in content if i != verb]
    status_line = clause.line_kind in ("item", "table") or clause.joint in STATUS_MARKS or (
        clause.closing in (":",)) or clause.line_kind == "code" and clause.joint in (":", "-")
    if not rest or all(units[i].value is not None or units[i].norm in ("check",) for i in rest):
        if "completion" in here:
            return None  # "Fatto!", "Done.": a completion, read as a state
        return "status" if status_line or clause.joint == "start" and clause.closing in (".", "!", "") else None
    if verb == content[0] and "imperatives" not in here:
        following = units[verb + 1] if verb + 1 < len(units) else None
        if following is not None and _opens_object(units, verb + 1, language):
            return "telegraphic"
    if verb == content[-1] or all(_after_word(units[i], language) for i in content if i > verb):
        before = [i for i in content if i < verb]
        if before and len(content) <= 8 and all(_np_word(units[i], language) for i in before):
            if any(kind_of(units[i], language) or units[i].cap or units[i].kind == "q" for i in before):
                return "telegraphic"
    return None


def _opens_object(units: list[Unit], at: int, language: str) -> bool:
    unit = units[at]
    cats = unit.cats(language)
    if unit.kind == "q" or unit.value is not None or unit.cap or "determiners" in cats or "pronouns" in cats:
        return True
    if "new" in cats or "everything" in cats:
        return True
    if kind_of(unit, language):
        following = units[at + 1] if at + 1 < len(units) else None
        return following is None or following.cap or following.kind == "q"
    return False


def _np_word(unit: Unit, language: str) -> bool:
    cats = unit.cats(language)
    return (unit.kind == "q" or unit.value is not None or unit.cap or any(c in cats for c in NP_WORDS)
            or kind_of(unit, language) is not None or unit.norm == "check")


def _after_word(unit: Unit, language: str) -> bool:
    cats = unit.cats(language)
    return (unit.kind in ("q", "p") or unit.value is not None or unit.cap or any(c in cats for c in AFTER_WORDS)
            or kind_of(unit, language) is not None)
