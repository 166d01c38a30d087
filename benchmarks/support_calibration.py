"""Calibrate the citation support check (app/knowledge/support.py) on benchmarks/data/support_pairs.yaml.

Run: `.venv/bin/python benchmarks/support_calibration.py`. It measures every labelled sentence-passage pair
with the bundled MiniLM, then chooses the score's weights and thresholds by 5-fold cross-validation (folds
keep the sentences written about one passage together): on the training folds, `supported` is the lowest
score at which at least 97% of the pairs called supported are supported, `unsupported` the highest under
which at least 97% of the pairs called unsupported are unsupported, and the weights are those that leave
the fewest pairs undecided. It prints the held-out precision and recall of each verdict (English, and the
other languages against English passages), the thresholds fitted on the whole set, and whether
app/knowledge/support.py ships them. Targets: held-out precision of "supported" and of "unsupported"
≥ 95% for English sentences.
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import Figures  # noqa: E402
from support_pairs import Pair, pairs  # noqa: E402

from app.knowledge.embeddings import embedder_from_config  # noqa: E402
from app.knowledge.support import THRESHOLDS, Measures, SupportCheck, Thresholds, Verdict, decide  # noqa: E402

FOLDS = 5
AIM = 0.97  # on the training folds, so that held out it stays at 95% or more
COVERAGE_WEIGHTS = (0.4, 0.6, 0.8, 1.0, 1.25, 1.5)
NEGATION_PENALTIES = (0.0, 0.1, 0.2, 0.3)


def thresholds_for(data: list[tuple[Measures, bool]], weight: float, penalty: float) -> tuple[float, float]:
    """The lowest score that keeps AIM precision for "supported", and the highest for "unsupported"."""
    probe = Thresholds(weight, penalty, 0, 0, 0, 0)
    scored = sorted(((m.score(probe), label) for m, label in data if not m.missing), reverse=True)
    high, right = float("inf"), 0
    for count, (score, label) in enumerate(scored, start=1):
        right += label
        if right / count >= AIM:
            high = score
    flagged = sum(not label for m, label in data if m.missing)
    flagged_wrong = sum(label for m, label in data if m.missing)
    low = -float("inf")
    below_right, below_wrong = flagged, flagged_wrong
    for score, label in sorted(scored):  # ascending: everything under `score` is called unsupported
        if score > high:
            break
        if below_right + below_wrong and below_right / (below_right + below_wrong) >= AIM:
            low = score
        below_right += not label
        below_wrong += label
    return high, min(low, high)


def fit(english: list[tuple[Measures, bool]], other: list[tuple[Measures, bool]]) -> Thresholds:
    """The weights leaving the fewest English pairs undecided, with their thresholds for both groups."""
    best: tuple[float, Thresholds] | None = None
    for weight, penalty in itertools.product(COVERAGE_WEIGHTS, NEGATION_PENALTIES):
        high, low = thresholds_for(english, weight, penalty)
        other_high, other_low = thresholds_for(other, weight, penalty)
        candidate = Thresholds(weight, penalty, round(high, 2), round(low, 2), round(other_high, 2),
                               round(other_low, 2))
        undecided = sum(verdict(m, candidate) is Verdict.UNDECIDED for m, _ in english) / len(english)
        if best is None or undecided < best[0]:
            best = (undecided, candidate)
    assert best is not None
    return best[1]


def verdict(measures: Measures, thresholds: Thresholds) -> Verdict:
    return decide(measures, thresholds).verdict


def report(figures: Figures, name: str, results: list[tuple[Verdict, bool]], target: bool) -> None:
    """Precision and recall of each verdict, and the share left undecided, for one group of pairs."""
    for verdict, truth in ((Verdict.SUPPORTED, True), (Verdict.UNSUPPORTED, False)):
        called = [label for v, label in results if v is verdict]
        precision = sum(label == truth for label in called) / len(called) * 100 if called else 100.0
        recall = sum(1 for v, label in results if v is verdict and label == truth) / max(
            sum(label == truth for _, label in results), 1) * 100
        figures.report(f"{name}: precision of {verdict.value}", precision, "%",
                       ">= 95" if target else None, precision >= 95 or not target)
        figures.report(f"{name}: recall of {verdict.value}", recall, "%")
    for truth, word in ((True, "supported"), (False, "unsupported")):
        group = [v for v, label in results if label == truth]
        figures.report(f"{name}: {word} pairs left undecided",
                       sum(v is Verdict.UNDECIDED for v in group) / max(len(group), 1) * 100, "%")


def measure(labelled: list[Pair], cache: Path | None) -> list[Measures]:
    """Measure every pair with MiniLM; `--measures FILE` keeps the measures to calibrate again without it."""
    if cache and cache.exists():
        return pickle.loads(cache.read_bytes())
    check = SupportCheck(embedder_from_config({"EMBEDDINGS": "minilm"}))
    measured = check.measure_all([(p.sentence, [p.passage]) for p in labelled])
    if cache:
        cache.write_bytes(pickle.dumps(measured))
    return measured


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--measures", type=Path, help="a file to keep the measures in (made on the first run)")
    labelled = pairs()
    measured = measure(labelled, parser.parse_args().measures)
    rows: list[tuple[Pair, Measures]] = list(zip(labelled, measured, strict=True))
    groups = sorted({p.group for p in labelled})
    fold_of = {group: index % FOLDS for index, group in enumerate(groups)}
    held_out: list[tuple[Pair, Verdict]] = []
    for fold in range(FOLDS):
        train = [(p, m) for p, m in rows if fold_of[p.group] != fold]
        fitted = fit([(m, p.supported) for p, m in train if m.language == "en"],
                     [(m, p.supported) for p, m in train if m.language != "en"])
        held_out += [(p, verdict(m, fitted)) for p, m in rows if fold_of[p.group] == fold]
    final = fit([(m, p.supported) for p, m in rows if m.language == "en"],
                [(m, p.supported) for p, m in rows if m.language != "en"])
    shipped = [(p, verdict(m, THRESHOLDS)) for p, m in rows]

    figures = Figures()
    english = [p for p in labelled if p.language == "en"]
    figures.report("labelled pairs", len(labelled), "pairs")
    figures.report("English pairs (supported)", len(english), f"pairs ({sum(p.supported for p in english)})")
    figures.report("other-language pairs (supported)", len(labelled) - len(english),
                   f"pairs ({sum(p.supported for p in labelled if p.language != 'en')})")
    report(figures, "held out, English", [(v, p.supported) for p, v in held_out if p.language == "en"], True)
    report(figures, "held out, other languages", [(v, p.supported) for p, v in held_out if p.language != "en"],
           False)
    report(figures, "shipped thresholds, English, whole set",
           [(v, p.supported) for p, v in shipped if p.language == "en"], False)
    report(figures, "shipped thresholds, other languages, whole set",
           [(v, p.supported) for p, v in shipped if p.language != "en"], False)
    undecided = [p for p, v in shipped if v is Verdict.UNDECIDED]
    figures.report("undecided pairs that are supported (the default's choice)",
                   sum(p.supported for p in undecided) / max(len(undecided), 1) * 100, "%")
    for kind in sorted({p.kind for p in labelled}):
        of_kind = [(p, v) for p, v in shipped if p.kind == kind]
        right = sum((v is Verdict.SUPPORTED) == p.supported and v is not Verdict.UNDECIDED for p, v in of_kind)
        figures.report(f"shipped, {kind}: decided right", right / len(of_kind) * 100, f"% of {len(of_kind)}")
    print(f"fitted on the whole set: {final}")
    print(f"shipped in app/knowledge/support.py: {THRESHOLDS}"
          f"{'' if replace(final) == THRESHOLDS else '  (differs: copy the fitted values)'}")
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
