"""Citation quality of knowledge answers, measured as ALCE does (Gao et al., 2023), and what the check costs.

Run: `.venv/bin/python benchmarks/citations.py`. For each scripted answer of benchmarks/data/cited_answers.yaml
the citation review runs as the knowledge skill runs it (bundled MiniLM, the default policy "mark", the
deterministic default for undecided sentences, one reconsideration with the case's second answer); the
figures are computed from the case's labels on what a user is shown, beside the same figures on the
answers as the model wrote them (no review, the baseline):
- citation recall: the share of cited sentences whose citations, taken together, support them;
- citation precision: the share of citations that support their sentence; a citation is imprecise when its
  sentence is unsupported, or when it does not support the sentence alone and the sentence's other
  citations support it without it (not needed);
- supported statements kept: of the sentences the model cited correctly, the share still cited correctly
  (what the review must not take away);
- unsupported statements shown unmarked: factual sentences the labels say nothing supports, shown with
  neither a citation nor the "(unverified)" marker.
Then the cost per answer (p50, p95): the review with cold caches (passages embedded for the first time, as in
a new turn), the embedder's share of it, and the floor: embedding the cited sentences and passages once each;
and the review again on passages seen before (an answer asked again).
Targets (issue 21): precision ≥ 95%, recall ≥ 90%, after the review.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import Figures  # noqa: E402
from _support_pairs import passages  # noqa: E402

from app.knowledge import statements  # noqa: E402
from app.knowledge.citation_review import Outcome, assess_citations, review_citations  # noqa: E402
from app.knowledge.citations import Source, TurnSources  # noqa: E402
from app.knowledge.embeddings import embedder_from_config  # noqa: E402
from app.knowledge.sentences import split_sentences  # noqa: E402
from app.knowledge.statements import is_claim  # noqa: E402
from app.knowledge.support import SupportCheck, windows  # noqa: E402
from app.knowledge.support_terms import passage_terms  # noqa: E402
from app.knowledge.word_tables import UNVERIFIED_MARK  # noqa: E402

CASES = Path(__file__).parent / "data" / "cited_answers.yaml"
ROUNDS = 3
KNOWN = frozenset({"skilldesk"})


class TimedEmbedder:
    """The embedder, with the time spent in it."""

    def __init__(self, embedder) -> None:
        self.embedder, self.seconds = embedder, 0.0
        self.dimensions, self.settings = embedder.dimensions, embedder.settings

    def embed(self, texts: list[str]) -> list[list[float]]:
        start = time.perf_counter()
        try:
            return self.embedder.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start


@dataclass
class Tally:
    """ALCE's counts over the cited sentences shown."""

    sentences: int = 0
    supported: int = 0
    citations: int = 0
    precise: int = 0
    problems: list[str] = field(default_factory=list)

    def add(self, sentence: str, cited: list[int | None], sets: list[list[int]]) -> None:
        self.sentences += 1
        valid = {n for n in cited if n is not None}
        supported = any(set(s) <= valid for s in sets)
        self.supported += supported
        for number in cited:
            self.citations += 1
            if number is None or not supported:
                continue
            alone = any(set(s) <= {number} for s in sets)
            others = any(set(s) <= valid - {number} for s in sets)
            self.precise += alone or not others
        if not supported:
            self.problems.append(sentence)


def plain(text: str) -> str:
    for mark in UNVERIFIED_MARK.values():
        text = text.replace(f" {mark}", "").replace(mark, "")
    return " ".join(text.split())


def label_of(labels: dict[str, list[list[int]]], sentence: str, case: str) -> list[list[int]]:
    key = plain(sentence)
    if key not in labels:
        raise SystemExit(f"{case}: no label for the sentence {key!r}; add it to {CASES.name}")
    return labels[key]


def turn_for(case: dict, texts: dict[str, str]) -> TurnSources:
    turn = TurnSources(searches=[case["question"]], bases=["Skilldesk documentation"])
    for number, pid in enumerate(case["passages"], start=1):
        turn.sources[number] = Source(number, 1000 + number, number, pid, "", texts[pid])
    return turn


def tally_answer(tally: Tally, text: str, labels: dict, case: str, turn: TurnSources | None) -> None:
    for sentence in split_sentences(text):
        cited = [n if turn is None or n in turn.sources else None for c in sentence.citations for n in c.numbers]
        if cited:
            tally.add(sentence.text, cited, label_of(labels, sentence.text, case))


def reviewed(case: dict, turn: TurnSources, check: SupportCheck):
    """The review as the skill runs it: once, and again on the second answer if it asks again.

    Returns the first review's outcome and the last review.
    """
    review = review_citations(assess_citations(case["answer"], turn, check, KNOWN))
    first = review.outcome
    if review.outcome is Outcome.ASK_AGAIN:
        again = case.get("retry") or case["answer"]
        review = review_citations(assess_citations(again, turn, check, KNOWN), may_ask_again=False)
    return first, review


def main() -> int:
    cases = yaml.safe_load(CASES.read_text())["cases"]
    texts = passages()
    embedder = embedder_from_config({"EMBEDDINGS": "minilm"})
    embedder.embed(["warm up"])
    check = SupportCheck(embedder)
    before, after = Tally(), Tally()
    kept_right = cited_right = unmarked = asked = no_evidence = 0
    for case in cases:
        labels, turn = case["labels"], turn_for(case, texts)
        tally_answer(before, case["answer"], labels, case["id"], turn)
        first, review = reviewed(case, turn, check)
        asked += first is Outcome.ASK_AGAIN
        no_evidence += review.outcome is Outcome.NO_EVIDENCE
        if review.outcome is not Outcome.NO_EVIDENCE:
            tally_answer(after, review.text, labels, case["id"], None)
        shown = {plain(s.text): s for s in split_sentences(review.text)}
        for sentence in split_sentences(case["answer"]):
            valid = {n for n in sentence.numbers if n in turn.sources}
            if sentence.citations and any(set(s) <= valid for s in label_of(labels, sentence.text, case["id"])):
                cited_right += 1
                now = shown.get(plain(sentence.text))
                kept_right += now is not None and any(
                    set(s) <= set(now.numbers) for s in label_of(labels, sentence.text, case["id"]))
        for text, sentence in shown.items():
            marked = any(mark in sentence.text for mark in UNVERIFIED_MARK.values())
            if not sentence.citations and not marked and is_claim(sentence) and labels.get(text) == []:
                unmarked += 1

    timings, embedding, floors, warm = [], [], [], []
    for _ in range(ROUNDS):
        for case in cases:
            turn = turn_for(case, texts)
            timed = TimedEmbedder(embedder)
            for cache in (windows, passage_terms, statements.passage_words):
                cache.cache_clear()  # cold: this turn's passages are new to the process
            check = SupportCheck(timed)
            start = time.perf_counter()
            reviewed(case, turn, check)
            timings.append(time.perf_counter() - start)
            embedding.append(timed.seconds)
            start = time.perf_counter()
            reviewed(case, turn, check)  # warm: the same passages again (an answer asked again)
            warm.append(time.perf_counter() - start)
            sentences = [s.text for s in split_sentences(case["answer"]) if s.citations]
            start = time.perf_counter()
            embedder.embed(sentences + [t.text for t in turn.sources.values()])
            floors.append(time.perf_counter() - start)

    figures = Figures()
    figures.report("answers", len(cases), "answers")
    figures.report("cited sentences, as written", before.sentences, "sentences")
    figures.report("citation recall, no review (baseline)", before.supported / before.sentences * 100, "%")
    figures.report("citation precision, no review (baseline)", before.precise / before.citations * 100, "%")
    figures.report("cited sentences, as shown after the review", after.sentences, "sentences")
    recall = after.supported / after.sentences * 100
    precision = after.precise / after.citations * 100
    figures.report("citation recall, after the review", recall, "%", ">= 90", recall >= 90)
    figures.report("citation precision, after the review", precision, "%", ">= 95", precision >= 95)
    figures.report("supported statements still cited after the review", kept_right / cited_right * 100,
                   f"% of {cited_right}")
    figures.report("unsupported statements shown unmarked", unmarked, "sentences")
    figures.report("answers asked again", asked, "answers")
    figures.report("answers ending as the no-evidence answer", no_evidence, "answers")

    def p(values: list[float], q: float) -> float:
        return statistics.quantiles(values, n=100)[q - 1] * 1000

    figures.report("support check per answer p50", p(timings, 50), "ms")
    figures.report("support check per answer p95", p(timings, 95), "ms")
    figures.report("of which embedding, p50", p(embedding, 50), "ms")
    figures.report("of which embedding, p95", p(embedding, 95), "ms")
    figures.report("floor: embedding the cited sentences and passages once, p50", p(floors, 50), "ms")
    figures.report("floor: embedding the cited sentences and passages once, p95", p(floors, 95), "ms")
    figures.report("support check beyond its embedding, p95",
                   p([t - e for t, e in zip(timings, embedding, strict=True)], 95), "ms")
    figures.report("support check, passages seen before (an answer asked again), p95", p(warm, 95), "ms")
    status = figures.print()
    for name, tally in (("after the review", after),):
        for sentence in tally.problems:
            print(f"  unsupported, cited {name}: {sentence}")
    return status


if __name__ == "__main__":
    sys.exit(main())
