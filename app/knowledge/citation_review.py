"""The citation review of a knowledge answer: each cited sentence checked against the passages it cites.

Two pure steps, so that a verifier model can decide in between what the measure cannot:

    assessment = assess_citations(text, turn, check)          # measures every cited sentence (embeddings)
    decisions = verifier(assessment.undecided) if configured   # {sentence index: supported?}, optional
    review = review_citations(assessment, policy=..., may_ask_again=..., decisions=decisions, link=...)

`review.outcome` is KEEP (show `review.text`), ASK_AGAIN (send `review.feedback` to the model, once) or
NO_EVIDENCE (show `review.text`, the honest no-evidence answer). An unsupported citation is removed and its
sentence becomes uncited; an uncited factual sentence is marked (UncitedPolicy.MARK, the default) or, on
strict bases (UncitedPolicy.EVERY_SENTENCE_CITES), reconsidered once and then dropped. When nothing factual
is supported: reconsidered once, then the no-evidence answer. A turn that searched nothing only loses the
citations it could not have (nothing was retrieved to support or to cite).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.knowledge.answer_layout import Layout, layout_of
from app.knowledge.citations import TurnSources, named_definitions, no_evidence_answer, rewrite_citations
from app.knowledge.sentences import Sentence, split_sentences
from app.knowledge.statements import about_the_assistant, is_claim, passage_words, quoted_in
from app.knowledge.support import Support, SupportCheck, Verdict
from app.knowledge.support_terms import language_of
from app.knowledge.word_tables import UNVERIFIED_MARK

MAX_CHECKED = 200  # cited sentences measured per answer; later ones get the default for the undecided
MAX_SUBSETS = 6  # a sentence citing more passages is judged on them together only
_OPEN, _CLOSE = "\ufdd0", "\ufdd1"  # noncharacters around a marker while the text is rewritten
_LIST_ITEM = re.compile(r"[-*+]|\d{1,9}[.)]")
_SENTENCE_END = re.compile(r"[.!?…。！？]+[\"'”’)\]*_]*\s*$")


class UncitedPolicy(StrEnum):
    """What happens to a factual sentence that cites no supporting passage (the agent's setting)."""

    MARK = "mark"  # kept, with a visible marker
    EVERY_SENTENCE_CITES = "every_sentence_cites"  # reconsidered once, then dropped


class Outcome(StrEnum):
    KEEP = "keep"
    ASK_AGAIN = "ask_again"
    NO_EVIDENCE = "no_evidence"


@dataclass(frozen=True)
class SentenceCheck:
    """One sentence of the answer: what it cites, whether it claims something, and the measure's verdict."""

    index: int
    sentence: Sentence
    numbers: tuple[int, ...]  # the passages of this turn it cites
    invalid: int  # citations of passages not retrieved in this turn (or numbers too long to be any)
    factual: bool
    verbatim: bool = False  # uncited, but word for word in a retrieved passage
    support: Support | None = None  # its cited passages together; None when it cites none of this turn's
    alone: Mapping[int, Support] = field(default_factory=dict)  # each alone (two to MAX_SUBSETS cited)
    without: Mapping[int, Support] = field(default_factory=dict)  # the others, without that one

    @property
    def text(self) -> str:
        return self.sentence.text


@dataclass
class CitationAssessment:
    """An answer's sentences with their measures: the input of review_citations."""

    text: str
    turn: TurnSources
    layout: Layout
    sentences: list[SentenceCheck]

    @property
    def undecided(self) -> list[SentenceCheck]:
        """The cited sentences the measure cannot decide: what a verifier model may be asked about."""
        return [s for s in self.sentences if s.support is not None and s.support.verdict is Verdict.UNDECIDED]


@dataclass(frozen=True)
class Removed:
    """A sentence whose citations were removed, and why."""

    sentence: str
    numbers: tuple[int, ...]
    reason: str


@dataclass
class CitationReview:
    """What to do with the answer, and what changed in it."""

    outcome: Outcome
    text: str
    feedback: str = ""
    citations: list[int] = field(default_factory=list)  # the passage numbers the text still cites
    removed: list[Removed] = field(default_factory=list)
    uncited: list[str] = field(default_factory=list)  # factual sentences left citing no supporting passage
    dropped: list[str] = field(default_factory=list)  # of those, the ones taken out (strict policy)
    marked: list[tuple[int, int]] = field(default_factory=list)  # the markers' spans in `text`
    undecided: int = 0
    undecided_by: str = ""  # "verifier", "default" or both, when some sentence was undecided

    def meta(self, turn: TurnSources) -> dict[str, Any]:
        """What the answer's metadata records of the review (never the passages' text)."""
        return {"outcome": self.outcome.value,
                "citations": [{"number": n, "passage_id": turn.sources[n].passage_id, "title": turn.sources[n].title}
                              for n in self.citations if n in turn.sources],
                "removed": [{"sentence": r.sentence[:300], "numbers": list(r.numbers), "reason": r.reason}
                            for r in self.removed],
                "uncited": len(self.uncited), "marked": len(self.marked), "dropped": len(self.dropped),
                "undecided": self.undecided, "undecided_by": self.undecided_by}


def assess_citations(text: str, turn: TurnSources, check: SupportCheck,
                     known: frozenset[str] = frozenset()) -> CitationAssessment:
    """Measure every cited sentence of an answer against the passages of this turn it cites.

    `known` names (lower case: the product's, the agent's) never count as a name the passages lack.
    """
    text = (text or "").replace(_OPEN, "").replace(_CLOSE, "")
    layout = layout_of(text)
    sentences = split_sentences(text, layout)
    checks: list[SentenceCheck] = []
    items: list[tuple[str, list[str]]] = []
    plans: list[tuple[int, str, int | None]] = []  # (sentence index, "joint" | "alone" | "without", number)
    previous, lead_in = "", ""
    joint_plans: list[int] = []
    quoted = " ".join(passage_words(source.text) for source in turn.sources.values())
    for index, sentence in enumerate(sentences):
        # A list item is read with the lead-in above its list ("Backups:" then "- Run every night at 02:00").
        item = sentence.kind == "paragraph" and _LIST_ITEM.match(text, sentence.start) is not None
        if sentence.kind == "paragraph" and not item:
            lead_in = sentence.text if sentence.text.endswith(":") else ""
        checked = f"{lead_in} {sentence.text}" if item and lead_in else sentence.text
        numbers = tuple(n for n in sentence.numbers if n in turn.sources)
        cited_marks = sum(len(c.numbers) for c in sentence.citations)
        factual = is_claim(sentence, first_row=sentence.kind == "table_row" and previous != "table_row")
        previous = sentence.kind
        if factual and not sentence.citations and about_the_assistant(sentence.text):
            factual = False  # what the assistant did ("I created the table"): the review of actions checks it
        # The passage's own words pasted (the offline model reports results so): supported by quotation.
        verbatim = factual and not numbers and quoted_in(sentence.text, quoted)
        checks.append(SentenceCheck(index, sentence, numbers, cited_marks - len(numbers), factual, verbatim))
        if not numbers or not factual or len(joint_plans) >= MAX_CHECKED:
            continue  # a sentence that claims nothing keeps its citations as references ("See [2].")
        joint_plans.append(index)
        items.append((checked, [turn.sources[n].text for n in numbers]))
        plans.append((index, "joint", None))
        if 2 <= len(numbers) <= MAX_SUBSETS:
            for number in numbers:
                items.append((checked, [turn.sources[number].text]))
                plans.append((index, "alone", number))
                items.append((checked, [turn.sources[n].text for n in numbers if n != number]))
                plans.append((index, "without", number))
    results = check.check_all(items, known) if items else []
    joint: dict[int, Support] = {}
    subsets: dict[tuple[str, int], dict[int, Support]] = {}
    for (index, kind, number), support in zip(plans, results, strict=True):
        if number is None:
            joint[index] = support
        else:
            subsets.setdefault((kind, index), {})[number] = support
    checks = [SentenceCheck(c.index, c.sentence, c.numbers, c.invalid, c.factual, c.verbatim, joint.get(c.index),
                            subsets.get(("alone", c.index), {}), subsets.get(("without", c.index), {}))
              if c.index in joint else c for c in checks]
    return CitationAssessment(text, turn, layout, checks)


def _kept_numbers(check: SentenceCheck, supported: bool) -> list[int]:
    """The citations a supported sentence keeps: not one it does not need (ALCE's precision), that is one
    that does not surely support it alone while the others surely do without it."""
    if not supported:
        return []
    if not check.alone:
        return list(check.numbers)
    return [n for n in check.numbers
            if check.alone[n].verdict is Verdict.SUPPORTED or check.without[n].verdict is not Verdict.SUPPORTED]


def review_citations(assessment: CitationAssessment, *, policy: UncitedPolicy = UncitedPolicy.MARK,
                     may_ask_again: bool = True, decisions: Mapping[int, bool] | None = None,
                     undecided_default: Verdict | None = None,
                     link: Callable[[int], str | None] | None = None) -> CitationReview:
    """Decide what the answer becomes: keep (cleaned, linked, marked), ask again once, or no evidence.

    `decisions` are a verifier's answers for `assessment.undecided` (by sentence index); the undecided
    sentences it did not answer get `undecided_default`, or by default the side of the calibrated cut their
    score falls on (Support.leaning; docs/knowledge.md has its precision and recall). `link` turns a passage
    number into its page's URL.
    """
    turn, decisions = assessment.turn, decisions or {}
    kept: dict[int, list[int]] = {}
    removed: list[Removed] = []
    problems: list[SentenceCheck] = []
    supported_claims = undecided = 0
    by: set[str] = set()
    for check in assessment.sentences:
        supported = False
        if check.numbers and not check.factual:
            kept[check.index] = list(check.numbers)
        elif check.numbers:
            verdict = check.support.verdict if check.support else Verdict.UNDECIDED
            if verdict is Verdict.UNDECIDED:
                undecided += 1
                by.add("verifier" if check.index in decisions else "default")
                if check.index in decisions:
                    verdict = Verdict.SUPPORTED if decisions[check.index] else Verdict.UNSUPPORTED
                elif undecided_default is not None or check.support is None:
                    verdict = undecided_default or Verdict.UNSUPPORTED  # not measured (too long): not shown
                else:
                    verdict = check.support.leaning
            supported = verdict is Verdict.SUPPORTED
            kept[check.index] = _kept_numbers(check, supported)
            if not supported:
                reason = check.support.reason if check.support else "not checked: the answer is too long"
                removed.append(Removed(check.text, check.numbers, reason))
        if check.factual:
            supported = supported or check.verbatim
            supported_claims += supported
            if not supported:
                problems.append(check)
    searched = bool(turn.searches)
    if searched and not supported_claims and problems:
        if may_ask_again and turn.sources:
            return CitationReview(Outcome.ASK_AGAIN, _compose(assessment, kept, [], policy, link)[0],
                                  _feedback(problems, turn, nothing_supported=True), removed=removed,
                                  uncited=[p.text for p in problems], undecided=undecided,
                                  undecided_by="+".join(sorted(by)))
        return CitationReview(Outcome.NO_EVIDENCE, no_evidence_answer(turn), removed=removed,
                              uncited=[p.text for p in problems], undecided=undecided,
                              undecided_by="+".join(sorted(by)))
    flagged = problems if searched else []
    strict = policy is UncitedPolicy.EVERY_SENTENCE_CITES
    if strict and flagged and may_ask_again and turn.sources:
        return CitationReview(Outcome.ASK_AGAIN, _compose(assessment, kept, flagged, policy, link)[0],
                              _feedback(flagged, turn, nothing_supported=False), removed=removed,
                              uncited=[p.text for p in flagged], undecided=undecided,
                              undecided_by="+".join(sorted(by)))
    text, marked = _compose(assessment, kept, flagged, policy, link)
    citations = list(dict.fromkeys(n for numbers in kept.values() for n in numbers))
    return CitationReview(Outcome.KEEP, text, citations=citations, removed=removed,
                          uncited=[p.text for p in flagged], dropped=[p.text for p in flagged] if strict else [],
                          marked=marked, undecided=undecided, undecided_by="+".join(sorted(by)))


def _compose(assessment: CitationAssessment, kept: Mapping[int, list[int]], flagged: list[SentenceCheck],
             policy: UncitedPolicy, link: Callable[[int], str | None] | None) -> tuple[str, list[tuple[int, int]]]:
    """The answer with each sentence's citations rewritten, flagged sentences marked or dropped."""
    text = assessment.text
    flagged_index = {check.index for check in flagged}
    drop = policy is UncitedPolicy.EVERY_SENTENCE_CITES
    starts = [b.start for b in assessment.layout.blocks]
    by_block: dict[int, list[SentenceCheck]] = {}
    for check in assessment.sentences:
        by_block.setdefault(bisect_right(starts, check.sentence.start) - 1, []).append(check)
    out: list[str] = []
    position = 0
    for block_index, checks in sorted(by_block.items()):
        block = assessment.layout.blocks[block_index] if block_index >= 0 else None
        if drop and block and all(c.index in flagged_index or not c.text for c in checks):
            out.append(text[position:block.start])  # the whole block goes: no empty list item is left behind
            position = block.end
            if _ends_blank(out):
                position += len(text[position:]) - len(text[position:].lstrip("\n"))  # nor an empty line
            continue
        for check in checks:
            sentence = check.sentence
            out.append(text[position:sentence.start])
            position = sentence.end
            if drop and check.index in flagged_index:
                position += len(text[position:]) - len(text[position:].lstrip(" \t"))
                continue
            numbers = set(kept.get(check.index, ()))
            piece = rewrite_citations(text[sentence.start:sentence.end], lambda _c, n, keep=numbers: n in keep, link,
                                      assessment.layout.part(sentence.start, sentence.end))
            if check.index in flagged_index:
                piece = _with_mark(piece, sentence.kind, UNVERIFIED_MARK[language_of(check.text)])
            out.append(piece)
    out.append(text[position:])
    composed = named_definitions("".join(out), assessment.turn.sources)
    everywhere = {n for numbers in kept.values() for n in numbers}
    composed = rewrite_citations(composed, lambda _c, n: n in everywhere, link)  # footnote definitions
    return _markers(composed.strip())


def _ends_blank(out: list[str]) -> bool:
    """Whether what is written so far is empty or ends with an empty line."""
    tail = ""
    for piece in reversed(out):
        tail = piece + tail
        if len(tail) >= 2:
            break
    return tail == "" or tail.endswith("\n\n")


def _with_mark(piece: str, kind: str, mark: str) -> str:
    marker = f"{_OPEN}{mark}{_CLOSE}"
    if kind == "table_row":
        body = piece.rstrip()
        if body.endswith("|"):
            return body[:-1].rstrip() + f" {marker} |" + piece[len(body):]
    end = _SENTENCE_END.search(piece)
    if end is None:
        return f"{piece.rstrip()} {marker}"
    return f"{piece[:end.start()].rstrip()} {marker}{piece[end.start():]}"


def _markers(text: str) -> tuple[str, list[tuple[int, int]]]:
    spans, out, position = [], [], 0
    for match in re.finditer(f"{_OPEN}(.*?){_CLOSE}", text):
        out.append(text[position:match.start()])
        start = sum(len(piece) for piece in out)
        out.append(match.group(1))
        spans.append((start, start + len(match.group(1))))
        position = match.end()
    out.append(text[position:])
    return "".join(out), spans


def _feedback(problems: list[SentenceCheck], turn: TurnSources, *, nothing_supported: bool) -> str:
    """What the model is told when it is asked again: the sentences, and what to do with them."""
    listed = []
    for check in problems[:5]:
        why = check.support.reason if check.support else (
            "it cites no passage of this turn" if not check.numbers else "it could not be checked")
        listed.append(f"- “{check.text[:200]}” ({why})")
    more = f"\n- … and {len(problems) - 5} more" if len(problems) > 5 else ""
    numbers = ", ".join(f"[{n}]" for n in turn.sources)
    head = ("None of your statements is supported by the passages it cites, so the answer cannot be shown:"
            if nothing_supported else
            "Every statement of this answer must cite the passage that says it; these do not, or cite one that "
            "does not say it:")
    return (f"{head}\n" + "\n".join(listed) + more +
            f"\nReconsider the same passages ({numbers}) once more: keep only what they say, cite each statement "
            "with the number of the passage that says it, and leave out what they do not say (or say plainly that "
            "the documents do not answer it).")
