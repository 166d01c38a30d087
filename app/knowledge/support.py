"""Whether the passages a sentence cites support it: a deterministic measure with three verdicts.

The measure (calibrated on benchmarks/data/support_pairs.yaml by benchmarks/support_calibration.py; the
thresholds and their precision and recall are in docs/knowledge.md):
1. every number, name and identifier of the sentence must be in the cited passages ("30 days" against a
   passage that says 7, `memories-team-<id>` against one that says `memories-user-<id>`): otherwise the
   sentence adds what the passages do not have, and is unsupported whatever else it shares with them;
2. the score is the best cosine similarity of the sentence with a window of the cited passages (one of
   their sentences or clauses), plus `coverage_weight` times the share of the sentence's terms
   found in them (numbers, names and identifiers weigh more), minus `negation_penalty` when the sentence
   and its best window disagree on being negated ("deletes" against "does not delete");
3. at or above the band's `supported` it is supported, under its `unsupported` it is not; in between it is
   undecided: a verifier model may decide, else the default is the side of the band's `cut` the score
   falls on (app/knowledge/citation_review.py).
Sentences in another language than English have their own, wider band: MiniLM is an English model, so the
similarity of an Italian sentence with an English passage says less (docs/knowledge.md says how much).

Embeddings go through the `Embedder` protocol (the bundled MiniLM by default, or whatever the app is
configured with): the check does not know which model it talks to, only that one text gives one vector.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import TYPE_CHECKING

from app.knowledge.embeddings import Embedder
from app.knowledge.sentences import split_sentences
from app.knowledge.support_terms import (
    PassageTerms,
    SentenceTerms,
    normalise,
    passage_terms,
    sentence_terms,
    stem,
)
from app.knowledge.word_tables import NEGATIONS, STOP_WORDS

if TYPE_CHECKING:
    import numpy as np

WEIGHTS = {"word": 1.0, "name": 2.0, "identifier": 3.0, "number": 3.0}
MAX_SENTENCE_CHARS = 1000  # longer is checked on its first 1,000 characters (MiniLM reads ~256 word pieces)
MAX_PASSAGE_CHARS = 20_000
_CLAUSE = re.compile(r"\s*(?:;|:\s|\s[—–]\s|\(|\))\s*")
_WORD = re.compile(r"[^\W\d_]+(?:'t)?")


class Verdict(StrEnum):
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"
    UNDECIDED = "undecided"


@dataclass(frozen=True, slots=True)
class Band:
    """Where the score decides for one group of sentences: `supported` ≥ `cut` ≥ `unsupported`."""

    supported: float  # at or above: supported
    cut: float  # between the two: undecided, leaning supported at or above this (the default's choice)
    unsupported: float  # under: unsupported


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The score's weights, and its bands for English sentences and for sentences in other languages."""

    coverage_weight: float
    negation_penalty: float
    english: Band
    other_languages: Band


# Fitted by benchmarks/support_calibration.py on benchmarks/data/support_pairs.yaml (its cross-validated
# precision and recall are in docs/knowledge.md). Another embedder has another scale: calibrate again.
THRESHOLDS = Thresholds(coverage_weight=0.6, negation_penalty=0.0, english=Band(1.3, 1.15, 1.15),
                        other_languages=Band(0.34, 0.3, 0.11))


@dataclass(frozen=True, slots=True)
class Measures:
    """What the check measured of one sentence against the passages it cites."""

    similarity: float  # best cosine of the sentence with a window of the passages
    window: str  # that window
    coverage: float  # weighted share of the sentence's terms found in the passages
    missing: tuple[str, ...]  # numbers, names, identifiers of the sentence no passage has
    negation_differs: bool  # the sentence is negated and its window is not, or the reverse
    language: str

    def score(self, thresholds: Thresholds) -> float:
        """Similarity plus weighted coverage, less the penalty for a negation one side lacks."""
        return (self.similarity + thresholds.coverage_weight * self.coverage
                - thresholds.negation_penalty * self.negation_differs)


@dataclass(frozen=True, slots=True)
class Support:
    """The verdict on one sentence against the passages it cites, with what decided it."""

    verdict: Verdict
    score: float
    measures: Measures
    leaning: Verdict  # for an undecided verdict, the side of the band's cut it falls on

    @property
    def reason(self) -> str:
        """Why, in words a person (or the model asked again) can read."""
        if self.measures.missing:
            return f"the cited passages do not have {', '.join(self.measures.missing)}"
        return {Verdict.SUPPORTED: "the cited passages say this",
                Verdict.UNSUPPORTED: "the cited passages do not say this",
                Verdict.UNDECIDED: "the cited passages may not say this"}[self.verdict]


NOTHING = Measures(0.0, "", 0.0, (), False, "en")


def coverage(terms: SentenceTerms, passages: Sequence[PassageTerms]) -> tuple[float, tuple[str, ...]]:
    """The weighted share of the sentence's terms found in the passages, and its decisive terms not found."""
    found = total = 0.0
    missing: list[str] = []
    for word in terms.words:
        total += WEIGHTS["word"]
        found += WEIGHTS["word"] * any(word in p.stems for p in passages)
    for kind, items in (("number", terms.numbers), ("name", terms.names), ("identifier", terms.identifiers)):
        for item in sorted(items):
            total += WEIGHTS[kind]
            if any(_has(kind, item, p) for p in passages):
                found += WEIGHTS[kind]
            else:
                missing.append(item)
    return (found / total if total else 0.0), tuple(missing)


def _has(kind: str, item: str, passage: PassageTerms) -> bool:
    if kind == "number":
        return item in passage.numbers
    if item in passage.tokens or item in passage.text:
        return True
    parts = [part for part in re.split(r"[-–]", item) if part]  # "V8-Isolate" against "V8 isolate"
    return kind == "name" and len(parts) > 1 and all(part in passage.text for part in parts)


@lru_cache(maxsize=512)
def windows(passage: str) -> dict[str, str]:
    """The passage's windows, each with the sentence it is part of: its sentences (a heading, and a table row
    read with its header: "Setting: Timezone, Default: UTC"), and their clauses (cached: do not change it)."""
    units: list[str] = []
    rows: dict[str, list[str]] = {}  # a table row's unit, and its cells read with their header
    header: tuple[str, ...] = ()
    for sentence in split_sentences(passage[:MAX_PASSAGE_CHARS]):
        if sentence.kind != "table_row" or not header:
            header = sentence.cells if sentence.kind == "table_row" else ()
            units.append(sentence.text)
            continue
        key, *cells = sentence.cells
        named = [f"{name}: {cell}" for name, cell in zip(header[1:], cells, strict=False) if name and cell]
        unit = ", ".join([f"{header[0]}: {key}" if header[0] else key, *named])
        units.append(unit)
        rows[unit] = [f"{key}, {cell}" for cell in named]
    found = {unit: unit for unit in units if unit}
    for unit in list(found):
        parts = rows[unit] if unit in rows else [c for c in _CLAUSE.split(unit) if c != unit and len(c.split()) >= 3]
        for part in parts:
            found.setdefault(part, unit)
    return found or {passage[:MAX_SENTENCE_CHARS]: passage[:MAX_SENTENCE_CHARS]}


def negated(text: str, language: str) -> bool:
    """Whether a text has a negation word of its language (or of English)."""
    words = set(_WORD.findall(normalise(text).lower()))
    return bool(words & (NEGATIONS.get(language, frozenset()) | NEGATIONS["en"]))


def negated_stems(text: str) -> set[str]:
    """The content words a negation of an English text bears on: the two words before it and the four after
    ("guests have none", "does not delete memories")."""
    words = _WORD.findall(normalise(text).lower())
    scoped: set[str] = set()
    for index, word in enumerate(words):
        if word in NEGATIONS["en"]:
            scoped |= {stem(w) for w in words[max(index - 2, 0):index] + words[index + 1:index + 5]
                       if len(w) >= 3 and w not in STOP_WORDS["en"]}
    return scoped


def negation_differs(sentence: str, terms: SentenceTerms, window: str, unit: str) -> bool:
    """Whether a sentence and the passage window it matches best disagree on a negation.

    A negated sentence agrees with a window whose whole sentence is negated (a clause may have left the
    negation out: "Values are encrypted at rest" of "… and never shown back"). A sentence that is not
    negated disagrees with a window only where the window negates something the sentence says ("deletes
    every memory" against "does not delete memories"), not where it negates something else.
    """
    if negated(sentence, terms.language):
        return not negated(unit, "en")
    return bool(negated_stems(window) & terms.words)


def _unit(vector: Sequence[float]) -> np.ndarray:
    import numpy as np  # heavy: loaded by the first check, not when the app starts (tests/test_startup.py)

    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


class SupportCheck:
    """Checks sentences against passages with one embedder; keeps the vectors of the texts it has seen."""

    CACHE = 4096  # vectors kept (passage windows and sentences); a turn cites a few passages of ~25 windows

    def __init__(self, embedder: Embedder, thresholds: Thresholds = THRESHOLDS) -> None:
        self.embedder = embedder
        self.thresholds = thresholds
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()  # unit length
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """One unit vector per distinct text, embedding in one call only those not seen lately."""
        with self._lock:
            known = {t: self._vectors[t] for t in texts if t in self._vectors}
            for text in known:
                self._vectors.move_to_end(text)
        wanted = list(dict.fromkeys(t for t in texts if t not in known))
        if wanted:
            fresh = {t: _unit(v) for t, v in zip(wanted, self.embedder.embed(wanted), strict=True)}
            with self._lock:
                self._vectors.update(fresh)
                while len(self._vectors) > self.CACHE:
                    self._vectors.popitem(last=False)
            known.update(fresh)
        return known

    def measure_all(self, items: Sequence[tuple[str, Sequence[str]]],
                    known: frozenset[str] = frozenset()) -> list[Measures]:
        """Measure each (sentence, passages) pair, with one call to the embedder for all of them."""
        usable = [(s[:MAX_SENTENCE_CHARS], [p[:MAX_PASSAGE_CHARS] for p in ps if p.strip()]) for s, ps in items]
        per_item: list[dict[str, str]] = []
        for sentence, passages in usable:
            found: dict[str, str] = {}
            for passage in passages if sentence.strip() else []:
                for window, unit in windows(passage).items():
                    found.setdefault(window, unit)
            per_item.append(found)
        texts = [s for (s, _), ws in zip(usable, per_item, strict=True) if ws] + [w for ws in per_item for w in ws]
        vectors = self.vectors(texts) if texts else {}
        out = []
        for (sentence, passages), candidates in zip(usable, per_item, strict=True):
            if not candidates:  # no text, or nothing to check against: nothing supports it
                out.append(NOTHING)
                continue
            terms = sentence_terms(sentence, known)
            names = list(candidates)
            cosines = [float(vectors[w] @ vectors[sentence]) for w in names]  # unit vectors: dot is cosine
            best = max(range(len(names)), key=cosines.__getitem__)
            similarity, window = float(cosines[best]), names[best]
            share, missing = coverage(terms, [passage_terms(p) for p in passages])
            differs = negation_differs(sentence, terms, window, candidates[window])
            out.append(Measures(round(similarity, 4), window, round(share, 4), missing, differs, terms.language))
        return out

    def decide(self, measures: Measures) -> Support:
        """Apply this check's thresholds to a sentence's measures."""
        return decide(measures, self.thresholds)

    def check_all(self, items: Sequence[tuple[str, Sequence[str]]],
                  known: frozenset[str] = frozenset()) -> list[Support]:
        """The verdicts on many (sentence, passages) pairs, each against its passages taken together."""
        return [self.decide(m) for m in self.measure_all(items, known)]

    def check(self, sentence: str, passages: Sequence[str], known: frozenset[str] = frozenset()) -> Support:
        """The verdict on one sentence against the passages it cites (taken together)."""
        return self.check_all([(sentence, passages)], known)[0]


def decide(measures: Measures, thresholds: Thresholds = THRESHOLDS) -> Support:
    """Apply thresholds to a sentence's measures: a missing number, name or identifier is never supported."""
    score = round(measures.score(thresholds), 4)
    band = thresholds.english if measures.language == "en" else thresholds.other_languages
    if measures is NOTHING or measures.missing or score < band.unsupported:
        verdict = Verdict.UNSUPPORTED
    elif score >= band.supported:
        verdict = Verdict.SUPPORTED
    else:
        verdict = Verdict.UNDECIDED
    leaning = verdict if verdict is not Verdict.UNDECIDED else (
        Verdict.SUPPORTED if score >= band.cut else Verdict.UNSUPPORTED)
    return Support(verdict, score, measures, leaning)


@lru_cache(maxsize=8)
def support_check_for(embedder: Embedder) -> SupportCheck:
    """This process's support check on an embedder (one vector cache per embedder).

    THRESHOLDS are calibrated for the bundled MiniLM: pass `embedder_from_config({"EMBEDDINGS": "minilm"})`
    whatever embedder retrieval uses, or calibrate again for another one.
    """
    return SupportCheck(embedder)
