"""Citations: an answer cites passages as [1], [2]; only passages retrieved in the current turn count."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CITATION = re.compile(r"\[(\d{1,3})\]")
NO_EVIDENCE = "The documents do not answer this."


@dataclass
class Source:
    number: int
    passage_id: int
    document_id: int
    title: str
    heading: str


@dataclass
class TurnSources:
    """The passages retrieved in this turn, numbered in order of retrieval, and what was searched."""

    sources: dict[int, Source] = field(default_factory=dict)
    searches: list[str] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)

    def number_for(self, passage_id: int, document_id: int, title: str, heading: str) -> int:
        for source in self.sources.values():
            if source.passage_id == passage_id:
                return source.number
        number = len(self.sources) + 1
        self.sources[number] = Source(number, passage_id, document_id, title, heading)
        return number


def cited(text: str) -> list[int]:
    """The citation numbers in a text, in order of first appearance."""
    return list(dict.fromkeys(int(match) for match in CITATION.findall(text)))


def valid_citations(text: str, turn: TurnSources) -> list[int]:
    return [number for number in cited(text) if number in turn.sources]


def strip_invalid(text: str, turn: TurnSources) -> str:
    """Remove citations of passages not retrieved in this turn (invented, or from an earlier turn)."""
    cleaned = CITATION.sub(lambda m: m.group(0) if int(m.group(1)) in turn.sources else "", text)
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned)).strip()


def no_evidence_answer(turn: TurnSources) -> str:
    searched = ", ".join(f"“{query}”" for query in turn.searches) or "nothing"
    where = ", ".join(turn.bases) or "no knowledge base"
    return (f"{NO_EVIDENCE} I searched {where} for {searched} and found no passage that supports an answer; "
            "that is not evidence either way about whether it exists.")


def linked(text: str, turn: TurnSources, url_for_passage) -> str:
    """Turn each valid [n] into a Markdown link to its passage page."""
    return CITATION.sub(lambda m: f"[\\[{m.group(1)}\\]]({url_for_passage(turn.sources[int(m.group(1))].passage_id)})"
                        if int(m.group(1)) in turn.sources else m.group(0), text)
