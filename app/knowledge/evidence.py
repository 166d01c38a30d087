"""Whether a search found evidence at all ("the documents do not answer this"), from raw retrieval signals.

The fused score says where a passage stands among the candidates, never whether it answers: every search has
a first passage. The verdict reads what does say it:

- the best passage's semantic similarity to the query (cosine, 1 - distance, of its best piece);
- what the lexical index holds of the query: a name of the query written in a passage (`MAX_STREAMS`) is
  evidence on its own; a name no passage holds (`SKILLDESK_TELEPORT_MODE`) leaves nothing to answer from; and
  a telling word that no passage holds ("teleportation", "Salesforce") asks for a closer match by meaning.

The thresholds were chosen on the questions of benchmarks/retrieval_questions.toml (docs/knowledge.md, "The
evidence floor", has the figures). They hold for the bundled MiniLM: another embedder has a scale of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.knowledge.names import forms, is_identifier, names_in, outside_names, parts

# Chosen from benchmarks/retrieval_questions.toml (docs/knowledge.md, "The evidence floor").
MIN_SIMILARITY = 0.25
MIN_SIMILARITY_UNKNOWN_WORDS = 0.46

_WORD = re.compile(r"[^\W_]+")
# Words that say nothing about a topic: a question's frame ("how do I …", "what is the …"). They are never
# "unknown", whatever the documents hold.
STOP_WORDS = frozenset("""
a about above after again all also am an and any are as at be been before being below between both but by can
could did do does doing done down during each either else ever every few for from further get gets got had has
have having he her here hers him his how i if in into is it its itself just kind let like ll made make makes
many may me might mine more most much must my no nor not now of off on once one only or other our out over own
please re s same say says she should so some such t than that the their them then there these they thing things
this those through to too under until up us use used uses using very want was way we well were what when where
which while who whom why will with without would yes yet you your
""".split())


@dataclass(frozen=True, slots=True)
class Floor:
    """When a search counts as evidence: how similar in meaning its best passage must be, plain and when a word
    of the query is in no passage."""

    min_similarity: float = MIN_SIMILARITY
    min_similarity_unknown_words: float = MIN_SIMILARITY_UNKNOWN_WORDS


@dataclass(frozen=True, slots=True)
class Unit:
    """What a passage must hold of a query: a telling word, or a name (whole, or every one of its parts).

    `identifier`: a name written as code, whose presence or absence decides (hyphenated prose does not).
    """

    label: str
    wholes: tuple[str, ...]
    parts: tuple[str, ...] = ()
    identifier: bool = False

    def tokens(self) -> tuple[str, ...]:
        return self.wholes + self.parts

    def held(self, present: set[str]) -> bool:
        return any(w in present for w in self.wholes) or bool(self.parts) and all(p in present for p in self.parts)


def units(query: str) -> list[Unit]:
    """The query's names and telling words (stop words and numbers left out), each once, in order."""
    found: list[Unit] = []
    for name in names_in(query):
        name_forms, name_parts = forms(name), [part for part in parts(name) if len(part) > 1]
        wholes = tuple(form for form in name_forms if form not in name_parts)
        found.append(Unit(name, wholes, tuple(part for part in name_forms if part in name_parts), is_identifier(name)))
    for word in dict.fromkeys(word.lower() for word in _WORD.findall(outside_names(query))):
        if word not in STOP_WORDS and not word.isdigit():
            found.append(Unit(word, (word,)))
    return found


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a search's raw signals say, and the verdict drawn from them.

    `similarity`: the best passage's cosine similarity to the query (None: no semantic search ran, or nothing
    was found by meaning). `lexical`: the best lexical score (bm25 on SQLite, ts_rank_cd on PostgreSQL: not
    comparable between them; shown, never decisive). `names`: the query's names some passage holds whole.
    `unknown`: the query's names and telling words that no passage of the searched bases holds.
    """

    similarity: float | None = None
    lexical: float | None = None
    names: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    answerable: bool = False
    reason: str = "nothing was searched"


NOTHING = Evidence()


def judge(query: str, similarity: float | None, lexical: float | None, present: set[str], floor: Floor) -> Evidence:
    """Decide whether a search found evidence; `present` holds the query units' tokens some passage holds."""
    wanted = units(query)
    names = tuple(u.label for u in wanted if u.identifier and any(w in present for w in u.wholes))
    unknown = tuple(u.label for u in wanted if not u.held(present))
    missing_names = [u.label for u in wanted if u.identifier and not u.held(present)]
    meaning = "nothing found by meaning" if similarity is None else f"best similarity {similarity:.2f}"

    def verdict(answerable: bool, reason: str) -> Evidence:
        return Evidence(similarity, lexical, names, unknown, answerable, reason)

    if missing_names:
        return verdict(False, f"no passage names {', '.join(missing_names)}")
    if names:
        return verdict(True, f"a passage names {', '.join(names)}")
    needed = floor.min_similarity_unknown_words if unknown else floor.min_similarity
    because = f" (no passage holds {', '.join(unknown)})" if unknown else ""
    if similarity is not None and similarity >= needed:
        return verdict(True, f"{meaning} ≥ {needed:.2f}{because}")
    return verdict(False, f"{meaning} < {needed:.2f}{because}")
