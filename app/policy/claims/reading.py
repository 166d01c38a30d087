"""Read an answer into lines, sentences and clauses of units (a word or a phrase of the word tables).

Markdown is read as structure: a list item and a table row are lines of their own, table cells and the
parts of "Contacts: created" are clauses, code blocks are read line by line, headings, quotes and table
headers hold no claim. A sentence's language is the one whose marker words it uses most (the answer's
language breaks ties, then the locale); its clause breaks ("but", "that", "and") are that language's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.policy.claims.lexicon import Entry, Lexicon
from app.policy.claims.wording import Text, Token, normalise, tokens

FENCE = re.compile(r"\s{0,3}(?:```|~~~)")
ITEM = re.compile(r"\s*(?:[-*+•·▪‣]|\d{1,3}[.)])\s+")
HEADING = re.compile(r"\s{0,3}#{1,6}\s")
QUOTE = re.compile(r"\s{0,3}>")
RULE_CHARACTERS = frozenset("|-: \t")
SENTENCE_ENDS = {".", "!", "?", ";"}
CLAUSE_MARKS = {",": ",", ":": ":", "(": "(", ")": ")", "|": "|", "→": ":", "⇒": ":", "=": ":",
                "¿": "?", "¡": ","}
CHECKS = {"✅": "check", "✔": "check", "☑": "check", "✓": "check", "🟢": "check", "👍": "check", "🎉": "check",
          "❌": "cross", "✗": "cross", "✘": "cross", "⚠": "cross", "🔴": "cross", "⛔": "cross", "🚫": "cross"}
FORMATTING = set("*#~_`\"'^\\<>[]")
EMPTY: dict[str, Any] = {}
SUBJECTS = ("first_person", "other_persons", "pronouns", "determiners", "everything")
HEADER_KINDS = {"table", "field", "agent", "trigger", "skill", "preference", "view", "permission"}
"""A header naming one of these ("| Table | Status |") lists changes; "| Name | Email | Status |" lists data."""


@dataclass(slots=True)
class Unit:
    """A word, a number, a quoted name, a mark, or a phrase of the word tables read as one."""

    norm: str
    start: int
    end: int
    kind: str
    cap: bool = False
    entry: Entry | None = None
    value: int | None = None
    moment: bool = False
    kinds: dict[str, str | None] | None = None
    """The kind of object it names, per language (things.kind_of keeps it here)."""

    def cats(self, language: str) -> dict[str, Any]:
        """Return what this unit is in `language` (its categories and their values)."""
        return self.entry.get(language, EMPTY) if self.entry else EMPTY

    def anywhere(self, category: str) -> Any:
        """Return the value of `category` in the first language that has it, or None."""
        for cats in (self.entry or EMPTY).values():
            if category in cats:
                return cats[category]
        return None


@dataclass
class Clause:
    units: list[Unit]
    language: str
    sentence: int
    line: int
    line_kind: str
    joint: str
    """How it follows the previous clause: start, ",", ":", "(", ")", "|", "and", "or", "break"."""
    cell: int = -1
    question: bool = False
    hypothetical: bool = False
    closing: str = ""


@dataclass
class Sentence:
    index: int
    language: str
    units: list[Unit]
    marks: dict[str, list[tuple[str, int]]]
    """Marker categories found (earlier, moment, signals): each with its (language, token position) hits."""
    moment: bool
    candidate: bool
    """It has a finished verb, a completion or state word, or a check mark: it may claim something."""
    line: int
    line_kind: str
    norm: str = field(repr=False, default="")
    _clauses: list[Clause] | None = field(default=None, repr=False)

    @property
    def clauses(self) -> list[Clause]:
        """The sentence's clauses, cut on first use (a sentence that may claim nothing is seldom cut)."""
        if self._clauses is None:
            self._clauses = _clauses(self.units, self.norm, self.language, self.index, self.line, self.line_kind)
            _mark_questions(self._clauses, self.language)
        return self._clauses


@dataclass
class Reading:
    text: Text
    language: str
    sentences: list[Sentence] = field(default_factory=list)

    def marked(self, category: str) -> bool:
        """Tell whether any sentence has a marker of `category`."""
        return any(category in sentence.marks for sentence in self.sentences)


def _lines(norm: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    while True:
        end = norm.find("\n", start)
        if end < 0:
            spans.append((start, len(norm)))
            return spans
        spans.append((start, end))
        start = end + 1


def _lex(found: list[Token], lexicon: Lexicon) -> tuple[list[Unit], dict[str, int], dict[str, list], bool]:
    """Read a sentence's tokens into units, and count its language votes and marker categories.

    Markers (language markers, earlier-turn phrases, signals) are matched at every word and hide nothing; the
    grammar is matched longest first. A marker word counts one vote, and so does every word or phrase of the
    grammar that only one language has ("ho", "righe", "erstellt"): a sentence is in the language its words
    belong to.
    """
    markers, grammar = lexicon.markers, lexicon.grammar
    votes: dict[str, int] = {}
    marks: dict[str, list[tuple[str, int]]] = {}

    def tally(entry: Entry, at: int) -> None:
        for language, cats in entry.items():
            for category in cats:
                if category == "marker":
                    votes[language] = votes.get(language, 0) + 1
                else:
                    marks.setdefault(category, []).append((language, at))

    marker_words, marker_firsts, facts = markers.words, markers.firsts, grammar.facts
    for at, token in enumerate(found):
        if token.kind == "w" or token.kind == "n":
            entry = marker_words.get(token.norm)
            if entry is None and token.kind == "w":
                entry = markers.word(token)
            if entry:
                tally(entry, at)
            if token.norm in marker_firsts:
                for phrase in markers.phrases_at(found, at):
                    tally(phrase.entry, at)
    units: list[Unit] = []
    append = units.append
    at, count = 0, len(found)
    grammar_words, grammar_firsts = grammar.words, grammar.firsts
    candidate = stated = timed = False
    while at < count:
        token = found[at]
        kind = token.kind
        if kind == "p":
            mark = CHECKS.get(token.norm, token.norm)
            candidate = candidate or mark == "check"
            append(Unit(mark, token.start, token.end, "p"))
            at += 1
            continue
        if kind == "q":
            append(Unit(token.norm, token.start, token.end, "q", True))
            at += 1
            continue
        size, entry = 1, None
        if token.norm in grammar_firsts:
            phrases = grammar.phrases_at(found, at)
            if phrases:
                size, entry = len(phrases[0].rest) + 1, phrases[0].entry
        if entry is None:
            entry = grammar_words.get(token.norm)
            if entry is None and grammar.prefixes:
                entry = grammar.word(token)
        if size == 1:
            unit = Unit(token.norm, token.start, token.end, kind, token.cap, entry, token.value, token.moment)
        else:
            unit = Unit(" ".join(t.norm for t in found[at:at + size]), token.start, found[at + size - 1].end, kind,
                        token.cap, entry, token.value, token.moment)
        if entry:
            only, number, claims, states, times = facts[id(entry)]
            candidate, stated, timed = candidate or claims, stated or states, timed or times
            if only is not None:
                votes[only] = votes.get(only, 0) + 1
            if unit.value is None:
                unit.value = number
        append(unit)
        at += size
    return units, votes, marks, candidate or stated and timed


def _leader(votes: dict[str, int], fallback: str) -> str:
    """Return the language with the most votes; the fallback wins a tie it is part of."""
    if not votes:
        return fallback
    best = max(votes.values())
    leaders = [language for language, count in votes.items() if count == best]
    return fallback if fallback in leaders else sorted(leaders)[0]


def _subject(unit: Unit, language: str) -> bool:
    cats = unit.cats(language)
    return (unit.kind == "q" or unit.cap or any(c in cats for c in SUBJECTS)) and unit.anywhere("object") is None


def _spaced(norm: str, token: Token) -> bool:
    """Tell whether a hyphen stands alone (a dash between words), not inside a word."""
    before = norm[token.start - 1] if token.start > 0 else " "
    after = norm[token.end] if token.end < len(norm) else " "
    return before.isspace() and after.isspace()


def _clauses(units: list[Unit], norm: str, language: str, number: int, line: int, kind: str) -> list[Clause]:
    clauses: list[Clause] = []
    current: list[Unit] = []
    joint, cell, hypothetical = "start", 0, False
    interrupted: tuple[list[Unit], str] | None = None  # the clause a parenthesis interrupts
    asides: list[Clause] = []

    def close(mark: str, next_joint: str) -> None:
        nonlocal current, joint
        if current:
            clauses.append(Clause(current, language, number, line, kind, joint, cell if kind == "table" else -1,
                                  closing=mark, hypothetical=hypothetical))
            clauses.extend(asides)
            asides.clear()
        elif mark and clauses:
            clauses[-1].closing = clauses[-1].closing or mark
        current, joint = [], next_joint

    for at, unit in enumerate(units):
        if unit.kind == "p":
            mark = "-" if unit.norm == "-" and _spaced(norm, Token("-", unit.start, unit.end, "p")) else unit.norm
            if mark == "(" and interrupted is None and current:
                interrupted, current, joint = (current, joint), [], "("
            elif mark == ")" and interrupted is not None:
                if current:
                    asides.append(Clause(current, language, number, line, kind, "(", cell if kind == "table" else -1,
                                         closing=")", hypothetical=hypothetical))
                (current, joint), interrupted = interrupted, None
            elif mark in SENTENCE_ENDS:
                close(mark, "start")
            elif mark in CLAUSE_MARKS or mark == "-":
                close(mark, CLAUSE_MARKS.get(mark, "-"))
                if mark == "|":
                    cell += 1
            elif mark in ("check", "cross"):
                current.append(unit)
            continue
        cats = unit.cats(language)
        if cats and current:
            joins = "and" if "coordinators" in cats else "or" if "alternatives" in cats else None
            if joins is None and "conditional" in cats:
                joins = "if"
            if joins is None and "breaks" in cats:
                following = units[at + 1] if at + 1 < len(units) else None
                # "that" starts a clause before a subject ("that the table", "that I"), not in "that table"
                # or "saved that to memory"
                ambiguous = "determiners" in cats or "pronouns" in cats
                joins = "break" if not ambiguous or following is not None and _subject(following, language) else None
            if joins:
                close("", joins)
        if "conditional" in cats:
            hypothetical = True
        current.append(unit)
    if interrupted is not None:  # a parenthesis never closed: the clause it interrupted ends there
        saved, current_joint = interrupted
        clauses.append(Clause(saved, language, number, line, kind, current_joint, closing="("))
    close("", "start")
    clauses.extend(asides)
    return clauses


def read(source: str, lexicon: Lexicon, locale: str | None = None) -> Reading:
    """Read an answer into sentences and clauses; linear in its length."""
    text = normalise(source)
    hint = (locale or "").lower()[:2]
    fallback = hint if hint in lexicon.languages else "en"
    reading = Reading(text, fallback)
    norm, in_code, sentence_number, table = text.norm, False, 0, "table"
    spans = _lines(norm)
    pending: list[tuple[list[Token], int, str]] = []
    for number, (start, end) in enumerate(spans):
        line = norm[start:end]
        if not line or line.isspace():
            continue
        if FENCE.match(line):
            in_code = not in_code
            continue
        kind, begin = ("code", start) if in_code else ("prose", start)
        if not in_code:
            if HEADING.match(line) or QUOTE.match(line) or _rule(line):
                continue
            if line.lstrip().startswith("|"):
                following = norm[spans[number + 1][0]:spans[number + 1][1]] if number + 1 < len(spans) else ""
                if _rule(following):
                    # The header names the columns: a table of changes, or data ("| Name | Email | Status |")
                    table = "table" if _lists_changes(tokens(text, start, end, lexicon.splitter), lexicon) else "data"
                    continue
                kind = table
            else:
                item = ITEM.match(line)
                if item:
                    kind, begin = "item", start + item.end()
        found = [t for t in tokens(text, begin, end, lexicon.splitter) if not (t.kind == "p" and t.norm in FORMATTING)]
        if found:
            pending.append((found, number, kind))
    read_sentences = []
    total: dict[str, int] = {}
    for found, number, kind in pending:
        for piece in _sentences(found, norm):
            units, votes, marks, candidate = _lex(piece, lexicon)
            for language, count in votes.items():
                total[language] = total.get(language, 0) + count
            read_sentences.append((units, votes, marks, number, kind, candidate))
    if total:
        best = max(total.values())
        reading.language = fallback if total.get(fallback) == best else max(total, key=lambda k: (total[k], k == "en"))
    for units, votes, marks, number, kind, candidate in read_sentences:
        if all(unit.kind == "p" and unit.norm not in ("check", "cross") for unit in units):
            continue
        language = _leader(votes, reading.language)
        # "a moment ago", "just now": this turn, not a dated past ("two days ago", "on Monday").
        recent = any(code == language for code, _at in marks.get("recent", ()))
        moment = not recent and (any(code == language for code, _at in marks.get("moment", ()))
                                 or any(u.moment for u in units))
        reading.sentences.append(Sentence(sentence_number, language, units, marks, moment, candidate, number, kind,
                                          norm))
        sentence_number += 1
    return reading


def _rule(line: str) -> bool:
    """Tell whether a line is a table's rule (|---|:---:|) or a horizontal rule (---)."""
    return "--" in line and RULE_CHARACTERS.issuperset(line)


def _lists_changes(header: list[Token], lexicon: Lexicon) -> bool:
    """Tell whether a table's header is that of a list of changes: a kind of object ("Table") or a change word."""
    for token in header:
        entry = lexicon.grammar.word(token) or EMPTY
        if any("change_headers" in cats or cats.get("object") in HEADER_KINDS for cats in entry.values()):
            return True
    return False


def _sentences(found: list[Token], norm: str) -> list[list[Token]]:
    out, current = [], []
    for token in found:
        current.append(token)
        if token.kind == "p" and token.norm in SENTENCE_ENDS:
            if token.norm == "." and token.end < len(norm) and not norm[token.end].isspace():
                continue  # "3.5", "e.g", a file name: not the end of a sentence
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _mark_questions(clauses: list[Clause], language: str) -> None:
    """Mark the clauses a question covers: back from "?" to the clause that opens it (or the sentence start)."""
    if not clauses or clauses[-1].closing != "?" and not any(c.joint == "?" for c in clauses):
        return
    for index in range(len(clauses) - 1, -1, -1):
        clause = clauses[index]
        clause.question = True
        first = clause.units[0]
        if clause.joint == "?" or "questions" in first.cats(language) or "modal" in first.cats(language):
            return
