"""The things a clause names: a kind of object with its name and count ("the table Contacts", "3 new rows"),
a bare name ("Bob", "'Leads'"), a pronoun, or an unknown noun ("a summary").

A name is a quoted word or a capitalised one beside a kind's noun ("the table Contacts", "the Contacts table",
"die Tabelle Kontakte"), or a capitalised word the language does not know (not in German, where every noun is
capitalised). A count is a number just before the noun, with adjectives between ("3 new rows", "drei Zeilen";
"2 of 5 rows" counts 2). A thing after a preposition is where something went ("to Contacts"), after "with" what
came with it ("with 3 rows").
"""

from __future__ import annotations

from dataclasses import dataclass

from app.policy.claims.lexicon import singular
from app.policy.claims.reading import Clause, Unit
from app.policy.claims.wording import Text

FUNCTION_WORDS = frozenset({
    "determiners", "prepositions", "pronouns", "first_person", "other_persons", "perfect", "passive", "perfect_first",
    "state_passive", "adverb_passive", "negation", "modal", "breaks", "coordinators", "state_adverbs", "questions",
    "conditional", "with", "now", "state_verbs", "everything", "self", "done", "past"})
MAX_NAME_WORDS = 4


@dataclass
class Thing:
    kind: str | None = None
    name: str | None = None
    count: int | None = None
    new: bool = False
    noun: str | None = None
    pronoun: bool = False
    place: bool = False
    """Introduced by a preposition: where something went ("to Contacts")."""
    with_: bool = False
    """Introduced by "with": what came with the main thing ("with 3 rows")."""
    at: int = 0

    @property
    def known(self) -> bool:
        return self.kind is not None or self.name is not None


def kind_of(unit: Unit, language: str) -> str | None:
    """Return the kind a noun names, in its language first; a capitalised soft noun ("Contacts") is a name."""
    if unit.kinds is None:
        unit.kinds = {}
    elif language in unit.kinds:
        return unit.kinds[language]
    kind = None
    if unit.entry:
        cats = unit.cats(language)
        kind = cats.get("object") or unit.anywhere("object")
        if kind is None:
            soft = cats.get("soft_object") or unit.anywhere("soft_object")
            kind = soft if soft and not unit.cap else None
    unit.kinds[language] = kind
    return kind


def _function_word(unit: Unit, language: str) -> bool:
    return not FUNCTION_WORDS.isdisjoint(unit.cats(language))


def is_name(unit: Unit, language: str, first: bool, capitalised_nouns: bool) -> bool:
    """Tell whether a unit can be (part of) a name."""
    if unit.kind == "q":
        return True
    if unit.kind != "w" or not unit.cap or _function_word(unit, language) or kind_of(unit, language):
        return False
    if unit.anywhere("soft_object"):
        return True
    return not first and not capitalised_nouns


class Namer:
    """Finds the things of one clause."""

    def __init__(self, text: Text, capitalised_nouns: dict[str, bool], container: dict[str, str],
                 head_last: dict[str, bool]) -> None:
        self.text = text
        self.capitalised_nouns = capitalised_nouns
        self.container = container
        self.head_last = head_last

    def source(self, units: list[Unit]) -> str:
        start, end = self.text.source_span(units[0].start, units[-1].end)
        words = self.text.source[start:end]
        return words[1:-1].strip() if units[0].kind == "q" and len(units) == 1 else words

    def things(self, clause: Clause, skip: frozenset[int] = frozenset(), language: str | None = None) -> list[Thing]:
        """Return the things of a clause in order; units at the positions in `skip` (the verb) are not read.

        `language` is the language to read the clause in (the verb's), the clause's own by default.
        """
        units, language = clause.units, language or clause.language
        german = self.capitalised_nouns.get(language, False)
        found: list[Thing] = []
        place = with_ = False

        def add(thing: Thing) -> None:
            nonlocal place, with_
            thing.place, thing.with_ = place, with_
            found.append(thing)
            place = with_ = False

        at = 0
        while at < len(units):
            if at in skip:
                place = with_ = False
                at += 1
                continue
            unit = units[at]
            cats = unit.cats(language)
            if "prepositions" in cats or "by_agent" in cats:
                ahead = at + 1
                while ahead < len(units) and "determiners" in units[ahead].cats(language):
                    ahead += 1
                between = at > 0 and units[at - 1].value is not None and ahead < len(units) and (
                    units[ahead].value is not None)
                place, at = not between, at + 1  # "2 of 5 rows" is a count, not a place
                continue
            if "with" in cats:
                with_, at = True, at + 1
                continue
            kind = kind_of(unit, language) if unit.kind == "w" else None
            following = units[at + 1] if at + 1 < len(units) and at + 1 not in skip else None
            head = kind_of(following, language) if following is not None and following.kind == "w" else None
            if kind and unit.cap and at > 0 and not german and not head and not (
                    following is not None and is_name(following, language, False, False)):
                kind = None  # "with Name, Email and Phone": a capitalised noun mid-sentence names something
                add(Thing(name=self.source([unit]), at=at))
                at += 1
                continue
            if head and kind and self.container.get(head) == kind:
                add(Thing(kind, at=at, place=True))  # "the table rows": the rows' table
                at += 1
                continue
            if kind and head and kind != head and unit.norm != singular(unit.norm) and following.kind == "w" \
                    and not following.cap:
                # "with the fields email, phone": a plural kind, then its members' names (not "an email field")
                thing = Thing(kind, self.source([following]), at=at)
                self._count(units, at, thing, language)
                add(thing)
                at += 2
                continue
            if head and (is_name(unit, language, False, False) or kind and kind != head and not following.cap):
                thing = Thing(head, self.source([unit]), at=at + 1)  # "the Contacts table", "an email field"
                self._count(units, at, thing, language)
                add(thing)
                at += 2
                continue
            if kind is not None:
                thing = Thing(kind, at=at)
                self._count(units, at, thing, language)
                end = at + 1
                while (end < len(units) and end not in skip and end - at <= MAX_NAME_WORDS
                       and (is_name(units[end], language, False, False)
                            or not german and units[end].cap and kind_of(units[end], language))
                       and (end == at + 1 or units[end].kind != "q")):
                    end += 1
                if end > at + 1:
                    thing.name = self.source(units[at + 1:end])
                add(thing)
                at = end
                continue
            if is_name(unit, language, at == 0 or at == 1 and 0 in skip, german and not place):
                end = at + 1
                while (end < len(units) and end not in skip and end - at < MAX_NAME_WORDS and units[end].kind == "w"
                       and is_name(units[end], language, False, german)):
                    end += 1
                add(Thing(name=self.source(units[at:end]), at=at))
                at = end
                continue
            if "pronouns" in cats and head is None:
                add(Thing(pronoun=True, at=at))
            elif unit.kind == "w" and not cats and at > 0 and (
                    "determiners" in units[at - 1].cats(language) or german and unit.cap):
                end = at + 1
                while self.head_last.get(language) and end < len(units) and end not in skip and (
                        units[end].kind == "w" and not units[end].cats(language) and not units[end].cap):
                    end += 1  # "a short summary": the noun is the last word
                add(Thing(noun=units[end - 1].norm, at=at))
                at = end
                continue
            elif not ("determiners" in cats or "new" in cats or unit.value is not None):
                place = with_ = False  # "nella risposta precedente ho creato la tabella": the place ended
            at += 1
        return found

    @staticmethod
    def _count(units: list[Unit], head: int, thing: Thing, language: str) -> None:
        """Read the count and "new" just before a noun: "3 new rows", "all three rows", "2 of 5 rows"."""
        back = head - 1
        while back >= 0 and head - back <= 3:
            unit = units[back]
            cats = unit.cats(language)
            if "new" in cats:
                thing.new = True
            elif unit.value is not None and not unit.moment:
                thing.count = unit.value
                before = back - 1
                while before >= 0 and "determiners" in units[before].cats(language):
                    before -= 1
                if before >= 1 and "prepositions" in units[before].cats(language) and units[before - 1].value:
                    thing.count = units[before - 1].value  # "2 of (the) 5 rows": the first number is the count
                return
            elif not ("determiners" in cats or unit.kind == "w" and not cats and not unit.cap):
                return
            back -= 1
