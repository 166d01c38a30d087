"""The labelled sentence-passage pairs of benchmarks/data/support_pairs.yaml, as the calibration and the tests
read them: the hand-written pairs, and the ones made from them (a supported sentence against a passage of
another document, and against a passage of its own document at least two passages away)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from app.knowledge.citations import shown_text

DATA = Path(__file__).parent / "data" / "support_pairs.yaml"
SUPPORTED_KINDS = ("restated", "paraphrase")


@dataclass(frozen=True)
class Pair:
    sentence: str
    passage: str
    supported: bool
    kind: str  # a kind of the data file, or "other_document", "same_document", "off_topic"
    language: str
    group: str  # the passage the sentence was written about (cross-validation folds keep a group together)


def load() -> dict:
    return yaml.safe_load(DATA.read_text())


def passages() -> dict[str, str]:
    """Each passage of the set by id, as the knowledge skill shows it."""
    return {g["id"]: shown_text(g["title"], g["heading"], g["text"]) for g in load()["passages"]}


def pairs() -> list[Pair]:
    data = load()
    groups = data["passages"]
    text = {g["id"]: shown_text(g["title"], g["heading"], g["text"]) for g in groups}
    out: list[Pair] = []
    for index, group in enumerate(groups):
        document, position = group["source"].split("#")
        supported = []
        for key, sentences in group["sentences"].items():
            kind, _, language = key.partition(":")
            for sentence in sentences:
                out.append(Pair(sentence, text[group["id"]], kind in SUPPORTED_KINDS, kind, language or "en",
                                group["id"]))
                if kind in SUPPORTED_KINDS:
                    supported.append((sentence, language or "en"))
        others = [g for g in groups if g["source"].split("#")[0] != document]
        same = [g for g in groups if g["source"].split("#")[0] == document
                and abs(int(g["source"].split("#")[1]) - int(position)) >= 2]
        for number, (sentence, language) in enumerate(supported):
            other = others[(index * 7 + number * 3) % len(others)]
            out.append(Pair(sentence, text[other["id"]], False, "other_document", language, group["id"]))
            if same:
                other = same[number % len(same)]
                out.append(Pair(sentence, text[other["id"]], False, "same_document", language, group["id"]))
    for number, sentence in enumerate(data["off_topic"]):
        for other in (groups[number % len(groups)], groups[(number + 21) % len(groups)]):
            out.append(Pair(sentence, text[other["id"]], False, "off_topic", "en", f"off_topic-{number}"))
    return out
