"""Claims said as a state, with no finished verb: a completion word, "now" with a state verb, a check mark.

- A completion word ("done", "ready", "all set", "fatto", "c'est fait", "listo", "erledigt") about a thing
  ("The Contacts table: ready.", "La tabella è pronta") claims some change of it; standing alone ("Done!") it
  claims a change of nothing named, which the check cannot decide.
- "now" (or a count of new things) with a state verb ("It holds 3 new rows now", "Your lists now show as cards",
  "La tabella ora contiene 3 righe") claims a change of the thing; "new" rows were created.
- ✅ beside a name in a list or a table row claims a change of it; ❌ claims none.
Not a state claim: a person ("I'm ready", "you're all set"), an offer ("ready to help"), a noun ("la lista"),
a negation, a question, a modal or a condition.
"""

from __future__ import annotations

from typing import Protocol

from app.policy.claims.lexicon import Kinds
from app.policy.claims.reading import Clause, Sentence
from app.policy.claims.records import Claim
from app.policy.claims.things import Thing

GUARDS = frozenset({"negation", "modal", "conditional", "request", "first_person", "other_persons"})
STATE_WORDS = frozenset({"completion", "state_verbs"})
ALONE = ("completion", "everything", "state_adverbs", "state_verbs", "state_passive", "adverb_passive")


class ClauseReader(Protocol):
    """What the state reader asks of the reader of a whole answer (app/policy/claims/finder.py `Finder`)."""

    kinds: Kinds

    @property
    def last(self) -> Thing | None: ...

    def things(self, clause: Clause, skip: frozenset[int] = frozenset(), language: str | None = None) -> list[Thing]:
        ...

    def _container(self, kind: str | None, things: list[Thing]) -> str | None: ...

    def make(self, clause: Clause, action: str | None, kind: str | None, target: str | None, container: str | None,
             count: int | None, earlier: bool, form: str, language: str, noun: str | None = None) -> Claim: ...


class StateReader:
    def __init__(self, finder: ClauseReader) -> None:
        self.finder = finder

    def read(self, clause: Clause, sentence: Sentence, before: Clause | None, after: list[Clause]) -> list[Claim]:
        """Return the state claims of a clause that has no verb claim."""
        if clause.question or clause.hypothetical:
            return []
        units, language = clause.units, clause.language
        marks = [u.norm for u in units if u.kind == "p"]
        if "cross" in marks:
            return []
        if "check" not in marks and not any(u.entry and any(STATE_WORDS & cats.keys() for cats in u.entry.values())
                                            for u in units):
            return []  # most clauses: nothing of a state
        completion = next((i for i, u in enumerate(units) if "completion" in u.cats(language)), None)
        if completion is not None and completion > 0 and "determiners" in units[completion - 1].cats(language):
            completion = None  # "la lista", "tus listas": a noun
        if completion is None:  # a short clause says little of its language: "Listo.", "Erledigt!"
            for index, unit in enumerate(units):
                found = next((code for code, cats in (unit.entry or {}).items() if "completion" in cats), None)
                if found is not None and not (index and "determiners" in units[index - 1].cats(found)):
                    completion, language = index, found
                    break
        now = any("now" in u.cats(language) for u in units)
        verb = next((i for i, u in enumerate(units) if "state_verbs" in u.cats(language)), None)
        if completion is None and "check" not in marks and verb is None:
            return []
        if any(not GUARDS.isdisjoint(u.cats(language)) for u in units):
            return []  # a negation, a modal, a condition; "I'm ready", "you're all set": a person, not a change
        finder = self.finder
        things = finder.things(clause, frozenset({completion} if completion is not None else ()), language)
        known = [t for t in things if (t.known or t.pronoun) and not t.with_]
        earlier = "earlier" in sentence.marks
        if completion is not None:
            following = units[completion + 1] if completion + 1 < len(units) else None
            if following is not None and "infinitive" in following.cats(language):
                return []  # "ready to help": an offer
            if after and after[0].joint in ("break", "if") and not known:
                return []  # "Ready when you are": an offer
            return self._about(clause, language, before, known, earlier)
        if "check" in marks:
            return self._about(clause, language, before, known, earlier, alone=False)
        new = [t for t in things if t.new and t.kind]
        if not (now or new):
            return []
        if new:
            thing = new[0]
            holder = next((t for t in known if t is not thing and not t.place), None)
            container = finder._container(thing.kind, things) or self._name(holder)
            return [finder.make(clause, "create", thing.kind, thing.name, container, thing.count, earlier, "state",
                                language)]
        view = next((t for t in things if t.kind in finder.kinds.never_applied), None)
        main = next((t for t in known if not t.place), None) or view
        if main is None:
            return []
        kind, target = self._resolved(main)
        if view is not None and kind not in finder.kinds.never_applied:
            kind = view.kind
        container = finder._container(kind, things)
        last = finder.last
        if container is None and kind in finder.kinds.container and last is not None and last.name and (
                last.kind in (finder.kinds.container[kind], None)):
            container = last.name
        return [finder.make(clause, None, kind, target, container, None, earlier, "state", language)]

    def _about(self, clause: Clause, language: str, before: Clause | None, known: list[Thing], earlier: bool,
               alone: bool = True) -> list[Claim]:
        """Return the completion claim of the thing named here, or before a ":" or "|", or of nothing named."""
        finder = self.finder
        main = next((t for t in known if not t.place), None)
        if main is None and before is not None and before.line == clause.line and (
                clause.joint in (":", "|", "-") or before.closing in (":", "|", "-")):
            main = next((t for t in finder.things(before) if (t.known or t.pronoun) and not t.place), None)
        if main is None:
            only = all(u.kind == "p" or any(c in u.cats(language) for c in ALONE) for u in clause.units)
            if not alone or not only:
                return []
            return [finder.make(clause, None, None, None, None, None, earlier, "completion", language)]
        kind, target = self._resolved(main)
        return [finder.make(clause, None, kind, target, None, None, earlier, "completion", language)]

    def _resolved(self, thing: Thing) -> tuple[str | None, str | None]:
        last = self.finder.last
        if thing.pronoun:
            return (last.kind, last.name) if last is not None else (None, None)
        return thing.kind, thing.name

    def _name(self, thing: Thing | None) -> str | None:
        if thing is None:
            return None
        return self._resolved(thing)[1]
