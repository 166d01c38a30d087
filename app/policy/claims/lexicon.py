"""The word tables: one TOML file per language in words/ and kinds.toml, loaded and checked once at import.

Each language file is checked against the schema of table_schema.py (jsonschema) and its entries are normalised
like an answer (case-folded, apostrophes made plain), so a table matches what it says. Two indexes are built
over all languages at once: the grammar (auxiliaries, verbs, guards, nouns: matched longest first, each word of
an answer read once) and the markers (language markers, earlier-turn phrases, the signals: every match
reported, none consumed). Every entry keeps its language, so a word shared by two languages ("a", "se") means
in each only what its own table says.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from app.policy.claims.table_schema import KINDS_TABLE, LANGUAGE
from app.policy.claims.wording import Splitter, Token, normalise, tokens

WORDS = Path(__file__).with_name("words")
Entry = dict[str, dict[str, Any]]
"""language -> category -> value (an action for verbs, a kind for nouns, an int for numbers, True otherwise)."""

MARKER_SECTIONS = {"detect", "time", "signals"}
RENAMED = {("state", "verbs"): "state_verbs", ("detect", "markers"): "marker", ("time", "moments"): "moment",
           ("objects", None): "object", ("soft_objects", None): "soft_object", ("numbers", None): "number"}
VALUED = {"done", "past", "first_person_past", "objects", "soft_objects", "numbers"}
MAX_CACHED = 100_000
_BRACES = re.compile(r"\{([^{}]*)\}")
_PLAIN = re.compile(r"[^\W\d_]+")


class WordTableError(ValueError):
    """A word table that breaks its schema; the message names the file and the place."""


def expand(entry: str) -> list[str]:
    """Expand braces: "creat{o,a}" is ["creato", "creata"], "créé{,e}" is ["créé", "créée"]."""
    match = _BRACES.search(entry)
    if match is None:
        return [entry]
    head, tail = entry[: match.start()], entry[match.end():]
    return [word for option in match.group(1).split(",") for word in expand(head + option + tail)]


@dataclass
class Phrase:
    """A table entry of several words: the patterns after the first (a word, "prefix*" or "#")."""

    rest: tuple[str, ...]
    entry: Entry = field(default_factory=dict)


def _fits(pattern: str, token: Token, numbers: set[str]) -> bool:
    if pattern == "#":
        return token.kind == "n" or token.norm in numbers
    if pattern.endswith("*"):
        return token.kind == "w" and token.norm.startswith(pattern[:-1])
    return token.norm == pattern and token.kind in ("w", "n")


class Index:
    """The entries of one way of matching: single words, phrases keyed by their first word, and prefixes."""

    def __init__(self) -> None:
        self.words: dict[str, Entry] = {}
        self.phrases: dict[str, dict[tuple[str, ...], Phrase]] = {}
        self.prefixes: dict[str, list[tuple[str, Entry]]] = {}
        self.pairs: dict[tuple[str, str], list[Phrase]] = {}
        self.loose: dict[str, list[Phrase]] = {}
        self.firsts: frozenset[str] = frozenset()
        self.numbers: set[str] = set()
        self._prefixed: dict[str, Entry | None] = {}
        self.facts: dict[int, tuple[str | None, int | None, bool, bool, bool]] = {}
        """id of an entry -> its only language, its number, whether it may claim, state, or say now/new."""

    def add(self, pieces: list[str], language: str, category: str, value: Any) -> None:
        first, rest = pieces[0], tuple(pieces[1:])
        if rest:
            entry = self.phrases.setdefault(first, {}).setdefault(rest, Phrase(rest)).entry
        elif first.endswith("*"):
            entry = {}
            self.prefixes.setdefault(first[:2], []).append((first[:-1], entry))
        else:
            entry = self.words.setdefault(first, {})
        entry.setdefault(language, {}).setdefault(category, value)

    def freeze(self, numbers: set[str]) -> None:
        """Index the phrases by their first two words (or their first, when the second is a pattern)."""
        for first, found in self.phrases.items():
            for phrase in found.values():
                second = phrase.rest[0]
                if second == "#" or second.endswith("*"):
                    self.loose.setdefault(first, []).append(phrase)
                else:
                    self.pairs.setdefault((first, second), []).append(phrase)
        for phrases in (*self.pairs.values(), *self.loose.values()):
            phrases.sort(key=lambda p: -len(p.rest))
        self.firsts = frozenset(self.phrases)
        self.numbers = numbers
        entries = [*self.words.values(), *(p.entry for found in self.phrases.values() for p in found.values())]

        def having(entry: Entry, categories: set[str]) -> bool:
            return any(categories & cats.keys() for cats in entry.values())

        for entry in entries:  # what a reader needs of an entry, looked up once
            self.facts[id(entry)] = (
                next(iter(entry)) if len(entry) == 1 else None,
                next((cats["number"] for cats in entry.values() if "number" in cats), None),
                having(entry, {"done", "past", "first_person_past", "completion"}),
                having(entry, {"state_verbs"}),
                having(entry, {"now", "new"}))

    def phrases_at(self, found: list[Token], at: int) -> list[Phrase]:
        """Return the phrases that start at `at`, longest first."""
        if at + 1 >= len(found):
            return []
        norm = found[at].norm
        paired = self.pairs.get((norm, found[at + 1].norm))
        loose = self.loose.get(norm)
        if paired is None and loose is None:
            return []
        out = []
        for phrase in (*(paired or ()), *(loose or ())):
            rest = phrase.rest
            if len(rest) == 1 and paired is not None and loose is None:
                out.append(phrase)  # the pair itself matched: nothing more to compare
            elif at + 1 + len(rest) <= len(found) and all(_fits(p, found[at + 1 + i], self.numbers)
                                                         for i, p in enumerate(rest)):
                out.append(phrase)
        if len(out) > 1:
            out.sort(key=lambda p: -len(p.rest))
        return out

    def word(self, token: Token) -> Entry | None:
        """Return the entry of one word or number: itself, else the first prefix it begins with."""
        norm = token.norm
        entry = self.words.get(norm)
        if entry is not None or token.kind != "w" or not self.prefixes:
            return entry
        cached = self._prefixed.get(norm, False)
        if cached is False:
            cached = next((e for prefix, e in self.prefixes.get(norm[:2], ()) if norm.startswith(prefix)), None)
            if len(self._prefixed) > MAX_CACHED:
                self._prefixed.clear()  # bounded: an answer of invented words cannot grow it without end
            self._prefixed[norm] = cached
        return cached

    def longest(self, found: list[Token], at: int) -> tuple[int, Entry | None]:
        """Return how many tokens the longest entry starting at `at` covers, and its entry."""
        token = found[at]
        if token.norm in self.firsts:
            phrases = self.phrases_at(found, at)
            if phrases:
                return len(phrases[0].rest) + 1, phrases[0].entry
        return 1, self.word(token) if token.kind in ("w", "n") else None

    def all_at(self, found: list[Token], at: int) -> list[tuple[int, Entry]]:
        """Return every entry starting at `at`: (tokens covered, entry)."""
        token = found[at]
        out = [(len(p.rest) + 1, p.entry) for p in self.phrases_at(found, at)] if token.norm in self.firsts else []
        entry = self.word(token) if token.kind in ("w", "n") else None
        if entry:
            out.append((1, entry))
        return out


@dataclass(frozen=True)
class Language:
    code: str
    name: str
    window: int
    past_is_done: bool
    capitalised_nouns: bool = False
    head_last: bool = False


@dataclass(frozen=True)
class Kinds:
    """kinds.toml: actions, kinds of object, the support table and the reading of tool names."""

    actions: tuple[str, ...]
    never_applied: frozenset[str]
    container: dict[str, str]
    named_by_container: frozenset[str]
    action_objects: dict[str, frozenset[str]]
    forced_objects: dict[str, str]
    support: dict[tuple[str, str], tuple[tuple[str, str], ...]]
    tools: tuple[tuple[str, str, str], ...]
    tool_verbs: dict[str, str]
    places: dict[str, tuple[str, str]]
    kind_actions: dict[str, frozenset[str]]


@dataclass
class Lexicon:
    languages: dict[str, Language]
    grammar: Index
    markers: Index
    splitter: Splitter
    kinds: Kinds
    nouns: dict[str, str]
    """English nouns of a kind (singular and plural), for reading tool names."""
    tool_kinds: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)


def _checked(path: Path, schema: dict[str, Any]) -> dict[str, Any]:
    with path.open("rb") as handle:
        try:
            data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as error:
            raise WordTableError(f"{path.name}: {error}") from None
    error = next(iter(sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))), None)
    if error is not None:
        where = ".".join(str(part) for part in error.path) or "(top)"
        raise WordTableError(f"{path.name}: {where}: {error.message}")
    for section, content in data.items():
        for key, entries in content.items() if isinstance(content, dict) else ():
            for number, entry in enumerate(entries) if isinstance(entries, list) else ():
                if not isinstance(entry, str) or not 0 < len(entry.strip()) <= 80:
                    raise WordTableError(f"{path.name}: {section}.{key}.{number}: {entry!r} is not a word or phrase "
                                         "of 1 to 80 characters")
    return data


def _pair(text: str) -> tuple[str, str]:
    action, kind = text.split(" ")
    return action, kind


def _kinds(data: dict[str, Any]) -> Kinds:
    known = set(data["objects"])
    named = [*data["never_applied"], *(spec["in"] for spec in data["objects"].values() if "in" in spec),
             *(kind for kinds in data.get("action_objects", {}).values() for kind in kinds),
             *data.get("forced_objects", {}).values()]
    if set(named) - known:
        raise WordTableError(f"kinds.toml: unknown kinds {sorted(set(named) - known)}; list them under [objects]")
    for action in (*data.get("action_objects", {}), *data.get("forced_objects", {}), *data["tool_verbs"]):
        if action not in data["actions"]:
            raise WordTableError(f"kinds.toml: unknown action {action!r}; add it to `actions`")
    for claim, changes in data["support"].items():
        for pair in (claim, *changes):
            action, kind = _pair(pair)
            if action not in data["actions"] or kind not in known:
                raise WordTableError(f"kinds.toml: support {claim!r}: unknown action or kind in {pair!r}")
    return Kinds(
        actions=tuple(data["actions"]), never_applied=frozenset(data["never_applied"]),
        container={kind: spec["in"] for kind, spec in data["objects"].items() if "in" in spec},
        named_by_container=frozenset(k for k, spec in data["objects"].items() if spec.get("named_by_container")),
        action_objects={a: frozenset(kinds) for a, kinds in data.get("action_objects", {}).items()},
        forced_objects=dict(data.get("forced_objects", {})),
        support={_pair(claim): tuple(_pair(c) for c in changes) for claim, changes in data["support"].items()},
        tools=tuple((pattern, *_pair(spec)) for pattern, spec in data["tools"].items()),
        tool_verbs={word: action for action, words in data["tool_verbs"].items() for word in words},
        places={kind: _pair(spec) for kind, spec in data.get("places", {}).items()},
        kind_actions={kind: frozenset(actions) for kind, actions in data.get("kind_actions", {}).items()})


def _pieces(entry: str, splitter: Splitter) -> list[str]:
    """Cut a table entry into the pieces an answer's tokens are compared with."""
    pieces: list[str] = []
    for word in entry.split():
        if _PLAIN.fullmatch(word):
            pieces.append(unicodedata.normalize("NFKC", word).casefold())
        elif word == "#":
            pieces.append("#")
        elif word.endswith("'") and normalise(word).norm in splitter.prefixes:
            pieces.append(normalise(word).norm)
        elif word.endswith("*"):
            pieces.append(normalise(word[:-1]).norm + "*")
        else:
            text = normalise(word)
            pieces.extend(token.norm for token in tokens(text, 0, len(text.norm), splitter))
    return pieces


def load(folder: Path = WORDS) -> Lexicon:
    """Load and check every language table of `folder` and its kinds.toml."""
    tables = {path.stem: _checked(path, LANGUAGE) for path in sorted(folder.glob("*.toml")) if path.stem != "kinds"}
    kinds_table = _checked(folder / "kinds.toml", KINDS_TABLE)
    kinds = _kinds(kinds_table)
    for name, table in tables.items():
        if table["language"]["code"] != name:
            raise WordTableError(f"{name}.toml: language.code is {table['language']['code']!r}; name the file after it")
        unknown = {kind for section in ("objects", "soft_objects") for kind in table.get(section, {})}
        if unknown - set(kinds_table["objects"]):
            raise WordTableError(f"{name}.toml: unknown kinds {sorted(unknown - set(kinds_table['objects']))}; "
                                 "list them under [objects] in kinds.toml")
    prefixes = sorted({normalise(p).norm for t in tables.values() for p in t["contractions"].get("prefixes", [])},
                      key=len, reverse=True)
    suffixes = sorted({normalise(s).norm for t in tables.values() for s in t["contractions"].get("suffixes", [])},
                      key=len, reverse=True)
    words = {normalise(w).norm: tuple(normalise(v).norm.split()) for t in tables.values()
             for w, v in t["contractions"].get("words", {}).items()}
    splitter = Splitter(tuple(prefixes), tuple(suffixes), words)
    grammar, markers, numbers = Index(), Index(), set()
    for code, table in tables.items():
        subjects = table["subjects"]
        subjects.setdefault("past_subjects", subjects["first_person"])
        for section, content in table.items():
            if section in ("language", "grammar", "contractions"):
                continue
            index = markers if section in MARKER_SECTIONS else grammar
            for key, entries in content.items():
                if section in VALUED:  # the key is the value: an action, a kind, a number
                    category, value = RENAMED.get((section, None), section), int(key) if section == "numbers" else key
                else:
                    category, value = RENAMED.get((section, key), key), True
                for entry in entries:
                    for variant in expand(entry):
                        pieces = _pieces(variant, splitter)
                        if pieces:
                            index.add(pieces, code, category, value)
                            if section == "numbers" and len(pieces) == 1:
                                numbers.add(pieces[0])
    grammar.freeze(numbers)
    markers.freeze(numbers)
    languages = {code: Language(code, t["language"]["name"], t["grammar"]["window"], t["grammar"]["past_is_done"],
                                t["grammar"].get("capitalised_nouns", False), t["grammar"].get("head_last", False))
                 for code, t in tables.items()}
    english = tables.get("en", {})
    nouns = {word: kind for section in ("objects", "soft_objects") for kind, entries in english.get(section, {}).items()
             for word in entries if " " not in word}
    return Lexicon(languages, grammar, markers, splitter, kinds, nouns)


def tool_kind(name: str, lexicon: Lexicon) -> tuple[str | None, str | None]:
    """Return the action and kind a tool's name says it changes ("create_ticket": create, ticket)."""
    known = lexicon.tool_kinds.get(name)
    if known is None:
        known = _read_tool_name(name, lexicon)
        if len(lexicon.tool_kinds) < MAX_CACHED:
            lexicon.tool_kinds[name] = known
    return known


def _read_tool_name(name: str, lexicon: Lexicon) -> tuple[str | None, str | None]:
    for pattern, action, kind in lexicon.kinds.tools:
        if fnmatch.fnmatchcase(name, pattern):
            return action, kind
    words = [w for w in re.split(r"[^a-z]+", name.lower()) if w]
    action = next((lexicon.kinds.tool_verbs[w] for w in words if w in lexicon.kinds.tool_verbs), None)
    nouns = [w for w in words if w not in lexicon.kinds.tool_verbs and w not in ("in", "to", "of", "the", "a", "by")]
    kind = next((lexicon.nouns[w] for w in nouns if w in lexicon.nouns), None)
    if kind is None and nouns:
        kind = singular(nouns[-1])
    return action, kind


def singular(word: str) -> str:
    """Return a noun without its plural s ("tickets" is ticket); short words are kept as they are."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
