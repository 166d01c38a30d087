"""Find every claimed change of an answer, clause by clause.

A finished verb form ("created", "creato", "créé", "creado", "erstellt") is a claim when something licenses
it in its own language: a perfect auxiliary with the speaker as subject ("I have", "ho", "j'ai", "he",
"ich habe"), a passive ("was", "è stata", "a été", "fue", "wurde"), a first-person subject before a simple
past ("I created", "creé"), the clause it is coordinated with ("I created the table and added 3 rows"), or a
telegraphic or status position ("Created the table Contacts", "Table Contacts created", "- Contacts: created",
"| Contacts | created |"); licensing.py says when. A passive with an explicit time or another person as
agent describes past data, not this turn. States say a change without a verb ("The Contacts table:
ready", "It holds 3 new rows now", "Your lists now show as cards", ✅ beside a name) and are read in
states.py.
"""

from __future__ import annotations

from dataclasses import replace

from app.policy.claims.lexicon import Lexicon
from app.policy.claims.licensing import STATUS_MARKS, Licence, licence
from app.policy.claims.reading import Clause, Reading, Sentence, Unit
from app.policy.claims.records import Claim
from app.policy.claims.states import StateReader
from app.policy.claims.things import Namer, Thing

VERB_FORMS = ("done", "past", "first_person_past")
SENTENCE_VERBS = ("done", "past", "first_person_past", "state_verbs", "perfect", "perfect_first", "passive",
                  "state_passive", "adverb_passive", "modal", "completion")


class Finder:
    """Reads the clauses of one answer in order, keeping what a pronoun or a coordinated clause refers to."""

    def __init__(self, reading: Reading, lexicon: Lexicon) -> None:
        self.reading = reading
        self.lexicon = lexicon
        self.kinds = lexicon.kinds
        languages = lexicon.languages.items()
        self.namer = Namer(reading.text, {c: lang.capitalised_nouns for c, lang in languages}, lexicon.kinds.container,
                           {c: lang.head_last for c, lang in languages})
        self.states = StateReader(self)
        self.proposals = reading.marked("proposal")
        self.claims: list[Claim] = []
        self._last: Thing | None = None
        self._unread: list[Clause | Sentence] = []
        self.context: Licence | None = None
        self.previous: list[Claim] = []
        self._things: dict[tuple[int, frozenset[int], str], list[Thing]] = {}

    @property
    def last(self) -> Thing | None:
        """The last thing named, for "it", "l'", "to it" and a row claim with no table."""
        while self._unread:
            source = self._unread.pop()
            clauses = source.clauses if isinstance(source, Sentence) else [source]
            named = [t for clause in clauses for t in self.things(clause) if t.known and not t.pronoun]
            if named:
                self._last, self._unread = named[-1], []
        return self._last

    def things(self, clause: Clause, skip: frozenset[int] = frozenset(), language: str | None = None) -> list[Thing]:
        """Return the things of a clause (read once per clause, verb and language)."""
        key = (id(clause), skip, language or clause.language)
        found = self._things.get(key)
        if found is None:
            found = self._things[key] = self.namer.things(clause, skip, language)
        return found

    def run(self) -> list[Claim]:
        for sentence in self.reading.sentences:
            if not sentence.candidate:
                self._unread.append(sentence)
                continue
            self.context, self.previous = None, []
            first = len(self.claims)
            for index, clause in enumerate(sentence.clauses):
                made = self.clause(clause, sentence, sentence.clauses[index - 1] if index else None,
                                   sentence.clauses[index + 1:])
                self.claims.extend(made)
                self.previous = made
            self._borrow(self.claims[first:], first)
        return self.claims

    def _borrow(self, claims: list[Claim], offset: int) -> None:
        """Complete a sentence's claims from the next one: "I created and filled the table Contacts", "I added the
        field Email and the field Phone to Contacts"; drop a claim that then repeats the next."""
        kept = list(claims)
        for index in range(len(kept) - 2, -1, -1):
            claim, following = kept[index], kept[index + 1]
            if claim.object is None and claim.target is None and claim.noun is None and claim.form == "active":
                claim = replace(claim, object=following.object, target=following.target,
                                container=claim.container or following.container)
            if claim.container is None and following.container and claim.object == following.object and (
                    claim.object in self.kinds.container):
                claim = replace(claim, container=following.container)
            same = ("action", "object", "target", "container", "count")
            if all(getattr(claim, key) == getattr(following, key) for key in same):
                del kept[index]
            else:
                kept[index] = claim
        self.claims[offset:] = kept

    # -- one clause ---------------------------------------------------------------------------------------------

    def clause(self, clause: Clause, sentence: Sentence, before: Clause | None, after: list[Clause]) -> list[Claim]:
        made: list[Claim] = []
        if clause.line_kind == "data":
            return made  # a row of a table of data: its cells are values, not claims
        for at, unit in enumerate(clause.units):
            for language, form, action in self._verbs(unit, clause.language):
                found = licence(self.lexicon, clause, at, language, form, self.context)
                if found is not None:
                    made.extend(self.claim(clause, at, action, found, sentence, before, after))
                    break
            if made:
                break
        self._remember_context(clause)
        if not made:
            made = self.states.read(clause, sentence, before, after)
        if not made and self.previous and clause.joint in (",", "and", "or", "(", ")", "|"):
            made = self._copies(clause)
        if made and (made[-1].target or made[-1].object):
            self._last, self._unread = Thing(made[-1].object, made[-1].target), []
        else:
            self._unread.append(clause)  # read for a name only if a later clause refers back to it
        return made

    @staticmethod
    def _verbs(unit: Unit, language: str) -> list[tuple[str, str, str]]:
        if not unit.entry:
            return []
        order = sorted(unit.entry, key=lambda code: code != language)
        return [(code, form, unit.entry[code][form]) for code in order for form in VERB_FORMS
                if form in unit.entry[code]]

    def _remember_context(self, clause: Clause) -> None:
        """Keep the subject and auxiliaries of a clause for the clause coordinated with it."""
        if clause.joint not in ("and", "or", ","):
            self.context = None
        language = clause.language
        for unit in clause.units:
            cats = unit.cats(language)
            if "first_person" in cats or "perfect_first" in cats:
                self.context = Licence("active", language, person="first")
            elif "passive" in cats or "state_passive" in cats:
                self.context = Licence("passive", language)
            elif "other_persons" in cats:
                self.context = None
            if "negation" in cats and self.context is not None:
                self.context.negated = True

    # -- licensing -----------------------------------------------------------------------------------------------

    # -- the claim -----------------------------------------------------------------------------------------------

    def claim(self, clause: Clause, verb: int, action: str, licence: Licence, sentence: Sentence,
              before: Clause | None, after: list[Clause]) -> list[Claim]:
        """Build the claim of a licensed verb (and those of "with 3 rows"); none for a description of past data."""
        if licence.negated:
            return []
        if action == "suggest" and not self.proposals:
            return []
        if licence.form != "active" and (sentence.moment or self._other_agent(clause, verb, licence.language)):
            return []  # "the table was created on 2026-01-02 by Ada": data about the past, not this turn
        things = self.things(clause, frozenset({verb}), licence.language)
        main = self._main(things, verb, licence.form)
        allowed = self.kinds.action_objects.get(action, ())
        if (main is None or not main.known) and allowed:  # "scheduled a nightly run with the trigger Nightly"
            main = next((t for t in things if t.kind in allowed), main)
        if main is None and licence.form == "status":
            if before is not None and (clause.joint in STATUS_MARKS or before.closing in STATUS_MARKS):
                main = self._main(self.things(before), len(before.units), "passive")
            elif clause.closing == ":" and after:
                return [c for thing in self._listed(after, clause.line)
                        for c in self._build(clause, action, licence, sentence, thing, things)]
        return self._build(clause, action, licence, sentence, main, things)

    def _listed(self, after: list[Clause], line: int) -> list[Thing]:
        return [t for c in after if c.line == line for t in self.things(c) if t.known and not t.place]

    def _build(self, clause: Clause, action: str | None, licence: Licence, sentence: Sentence, main: Thing | None,
               things: list[Thing]) -> list[Claim]:
        earlier = licence.earlier or "earlier" in sentence.marks or licence.person == "first" and sentence.moment
        kind, target, count, noun = (main.kind, main.name, main.count, main.noun) if main else (None, None, None, None)
        if main is not None and main.pronoun and self.last is not None:
            kind, target = self.last.kind, self.last.name
        if kind is None:
            kind = next((t.kind for t in things if t.kind in self.kinds.never_applied), None)
        memory = next((t for t in things if t.place and t.kind in self.kinds.places), None)
        if memory is not None:  # "saved your preference to memory": remembered
            action, kind = self.kinds.places[memory.kind]
        container = self._container(kind, things)
        if kind in self.kinds.container and container is None and self.last is not None and self.last.name and (
                self.last.kind in (self.kinds.container[kind], None)) and self.last.name != target:
            container = self.last.name
        action, kind = self.normalise(action, kind)
        if main is not None and main.new and action is None:
            action = "create"
        claim = self.make(clause, action, kind, target, container, count, earlier, licence.form, licence.language,
                          noun)
        made = [claim]
        for extra in things:
            if extra.with_ and extra.kind and extra.kind != kind and (extra.count is not None or extra.name) and (
                    self.kinds.container.get(extra.kind) in (kind, None)):
                made.append(replace(claim, action="create", object=extra.kind, target=extra.name,
                                    container=target or container, count=extra.count, noun=None))
        return made

    def normalise(self, action: str | None, kind: str | None) -> tuple[str | None, str | None]:
        """Apply kinds.toml: an action's forced kind, and an action read on a kind it does not apply to."""
        if action in self.kinds.forced_objects:
            return action, self.kinds.forced_objects[action]
        taken = self.kinds.kind_actions.get(kind or "")
        if taken is not None and action is not None and action not in taken:
            return action, "field"  # "I updated Bob's email": a field of a record, nothing sent
        allowed = self.kinds.action_objects.get(action or "")
        if allowed is not None and kind is not None and kind not in allowed:
            return None, kind  # "I called the table Leads": some change of that table
        return action, kind

    def _container(self, kind: str | None, things: list[Thing]) -> str | None:
        for thing in things:
            if thing.place and (thing.name or thing.pronoun):
                if thing.pronoun:
                    return self.last.name if self.last is not None else None
                if thing.kind is None or thing.kind == self.kinds.container.get(kind or "") or kind is None:
                    return thing.name
        return None

    @staticmethod
    def _main(things: list[Thing], verb: int, form: str) -> Thing | None:
        candidates = [t for t in things if not t.place and not t.with_]
        known = [t for t in candidates if t.known] + [t for t in candidates if t.pronoun]
        ordered = ([t for t in known if t.at < verb] + [t for t in known if t.at > verb]) if form == "passive" else (
            [t for t in known if t.at > verb] + [t for t in known if t.at < verb])
        if ordered:
            return ordered[0]
        nouns = [t for t in candidates if t.noun]
        return nouns[0] if nouns else None

    def make(self, clause: Clause, action: str | None, kind: str | None, target: str | None, container: str | None,
             count: int | None, earlier: bool, form: str, language: str, noun: str | None = None) -> Claim:
        text = self.reading.text
        start, end = text.source_span(clause.units[0].start, clause.units[-1].end)
        return Claim(action, kind, target, container, count, earlier, form, language, (start, end),
                     text.source[start:end], noun)

    def _other_agent(self, clause: Clause, verb: int, language: str) -> bool:
        """Tell whether a passive names someone else as its agent ("by Ada", "da un altro utente")."""
        units = clause.units
        for index in range(verb + 1, len(units)):
            cats = units[index].cats(language)
            if "by_agent" not in cats:
                continue
            if " " in units[index].norm:
                return True
            following = units[index + 1] if index + 1 < len(units) else None
            if following is not None and "self" not in following.cats(language) and (
                    following.cap or following.kind == "q" or "other_persons" in following.cats(language)):
                return True
        return False

    def _copies(self, clause: Clause) -> list[Claim]:
        """Repeat the previous claim for a clause that only names things ("I created Contacts, Leads and Orders")."""
        language = clause.language
        if any(any(c in u.cats(language) for c in SENTENCE_VERBS) for u in clause.units):
            return []
        if any(u.kind == "w" and not u.cats(language) and not u.cap for u in clause.units):
            return []  # a word the tables do not know: more than a list of names
        things = self.things(clause)
        model = self.previous[-1]
        count = next((u.value for u in clause.units if u.value is not None and not u.moment), None)
        if clause.joint == "(" and not any(t.count is not None for t in things) and count is None:
            return []  # "(contacts, id 5)": details of the thing named, "(3 rows)" is a claim of its own
        place = next((t.name for t in things if t.place and t.name), None)
        made = []
        for thing in things:
            if thing.place or thing.pronoun or not (thing.known or thing.count is not None):
                continue
            if thing.kind and model.object and thing.kind != model.object and (
                    self.kinds.container.get(thing.kind) != model.object) or thing.kind and not model.object and (
                    thing.count is None):
                continue  # another kind of thing: a detail of the claim, not a second one
            kind = thing.kind or model.object
            holder = self.kinds.container.get(kind or "")
            container = place or (model.target if holder is not None and model.object in (holder, None)
                                  else model.container)
            copy = self.make(clause, model.action, kind, thing.name, container, thing.count, model.earlier, model.form,
                             model.language)
            made.append(copy)
        if not made and count is not None:
            made.append(self.make(clause, model.action, model.object, None, place or model.container, count,
                                  model.earlier, model.form, model.language))
        return made
