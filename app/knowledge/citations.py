"""Citations: an answer cites the passages of this turn by number, in any style models write.

One parser for every form: `[1]`, `[1, 2]`, `[1-3]` (hyphen or dash), `[1][2]`, `【1】`, `[1†source]`,
`【4:2†source】` (the number before the colon is the passage: models write `【n:0†source】`), `^1`, `[^1]` and
footnote definitions (`[^1]: …`, `[1]: …` at the start of a line). Only passages retrieved in the current
turn count. Numbers in code, quotations, links, URLs and JSON are not citations and are never touched
(answer_layout.py finds them); a number of more than MAX_DIGITS digits is an invalid citation, never
converted to an int.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from app.knowledge.answer_layout import Layout, layout_of

NO_EVIDENCE = "The documents do not answer this."
MAX_DIGITS = 9  # no turn retrieves a billion passages: a longer number is an invalid citation
MAX_RANGE = 50  # [1-50] is a range; [1-1000000] cites nothing

_NUMBER = r"\d++"
_ITEM = rf"{_NUMBER}(?:\s*+[-–—]\s*+{_NUMBER}|:{_NUMBER})?+"
_GROUP = rf"{_ITEM}(?:\s*+[,;]\s*+{_ITEM})*+"
_DAGGER = r"(?:\s*+†[^\]】\n]{0,120}+)?+"
# A bracket after a digit or an underscore is an index (rows_2[3], x1[0]), not a citation.
_BRACKET = rf"(?<![\\\d_])\^?\[\s*+(?P<bracket>{_GROUP})\s*+{_DAGGER}\]"
_FOOTNOTE = rf"(?<!\\)\[\^(?P<footnote>{_NUMBER})\]"
_LENTICULAR = rf"【\s*+(?P<lenticular>{_GROUP})\s*+{_DAGGER}】"
# ^1 after a word of two letters or more, a space or punctuation: not an exponent (2^31, x^2).
_CARET = rf"(?:(?<=[A-Za-z\u00c0-\u024f]{{2}})|(?<=[\s.,;:!?)\]”\"'’]))\^(?P<caret>{_NUMBER})\^?+"
CITATION = re.compile("|".join((_FOOTNOTE, _BRACKET, _LENTICULAR, _CARET)))
DEFINITION = re.compile(
    rf"^[ \t]{{0,3}}(?:[-*+][ \t]+)?(?P<marker>\[\^?(?P<number>{_NUMBER})\]|【(?P<number2>{_NUMBER})】):[ \t]*+"
    r"(?P<rest>[^\n]*+)\n?", re.MULTILINE)
_DEFINITION_MARKER = re.compile(r"\[\^?\d+\]|【\d+】")
# Between two citations of one cluster ("[1], [2]", "[1][2]", "[1] [2]").
_CLUSTER_GAP = re.compile(r"[ \t]*+[,;]?[ \t]*+")
_SPACE = " \t"
_CLOSING = ".,;:!?)]}\n"


@dataclass(frozen=True, slots=True)
class Citation:
    """One citation mark: its span, the passage numbers it names (None: too many digits), and its form."""

    start: int
    end: int
    numbers: tuple[int | None, ...]
    form: str  # "bracket", "footnote", "lenticular", "caret" or "definition"


def _number(digits: str) -> int | None:
    return int(digits) if len(digits) <= MAX_DIGITS else None


def _numbers(group: str) -> tuple[int | None, ...]:
    numbers: list[int | None] = []
    for item in re.split(r"\s*[,;]\s*", group):
        if ":" in item:
            item = item.split(":", 1)[0]
        bounds = re.split(r"\s*[-–—]\s*", item)
        first = _number(bounds[0])
        if len(bounds) == 1:
            numbers.append(first)
            continue
        last = _number(bounds[1])
        if first is None or last is None or not 0 <= last - first <= MAX_RANGE:
            numbers.append(None)
        else:
            numbers.extend(range(first, last + 1))
    return tuple(numbers)


def find_citations(text: str, layout: Layout | None = None) -> list[Citation]:
    """Every citation mark outside code, quotations, links and JSON, in order (definitions included)."""
    layout = layout or layout_of(text)
    found: list[Citation] = []
    for match in DEFINITION.finditer(text):
        if not layout.overlaps_protected(match.start("marker"), match.end("marker")):
            digits = match.group("number") or match.group("number2")
            found.append(Citation(match.start(), match.end(), (_number(digits),), "definition"))
    definitions = [(c.start, c.end) for c in found]
    for match in CITATION.finditer(text):
        start, end = match.span()
        if layout.overlaps_protected(start, end) or any(s <= start < e for s, e in definitions):
            continue
        form = match.lastgroup or ""
        group = match.group(form)
        numbers = _numbers(group) if form in ("bracket", "lenticular") else (_number(group),)
        found.append(Citation(start, end, numbers, form))
    return sorted(found, key=lambda c: c.start)


def _clusters(text: str, citations: list[Citation]) -> list[list[Citation]]:
    """Citations next to each other, with at most a comma or a semicolon between them."""
    clusters: list[list[Citation]] = []
    for citation in citations:
        if citation.form != "definition" and clusters and clusters[-1][-1].form != "definition":
            previous = clusters[-1][-1]
            if _CLUSTER_GAP.fullmatch(text, previous.end, citation.start):
                clusters[-1].append(citation)
                continue
        clusters.append([citation])
    return clusters


Keep = Callable[[Citation, int], bool]
Link = Callable[[int], "str | None"]


def _mark(number: int, link: Link | None) -> str:
    url = link(number) if link else None
    return f"[\\[{number}\\]]({url})" if url else f"[{number}]"


def rewrite_citations(text: str, keep: Keep, link: Link | None = None, layout: Layout | None = None) -> str:
    """Keep the numbers `keep` accepts, linked where `link` gives a URL; remove the others cleanly.

    A group keeps its kept members; a citation left with none is removed with the space before it (no
    dangling brackets, commas or double spaces); a footnote definition left with none loses its line.
    A citation whose numbers are all kept and that gets no link stays exactly as written.
    """
    citations = find_citations(text, layout)
    out: list[str] = []
    position = 0
    for cluster in _clusters(text, citations):
        start, end = cluster[0].start, cluster[-1].end
        kept = [[n for n in c.numbers if n is not None and keep(c, n)] for c in cluster]
        whole = all(len(k) == len(c.numbers) for k, c in zip(kept, cluster, strict=True))
        if cluster[0].form == "definition":
            out.append(text[position:start])
            if kept[0]:
                marker = _mark(kept[0][0], link) if link and link(kept[0][0]) else None
                line = text[start:end]
                found = _DEFINITION_MARKER.search(line)
                out.append(line if marker is None or found is None
                           else line[:found.start()] + marker + line[found.end():])
            position = end
            continue
        if whole:
            out.append(text[position:start])
            for index, citation in enumerate(cluster):
                if index:
                    out.append(text[cluster[index - 1].end:citation.start])
                linked_all = link is not None and all(link(n) for n in kept[index])
                out.append("".join(_mark(n, link) for n in kept[index]) if linked_all
                           else text[citation.start:citation.end])
            position = end
            continue
        numbers = list(dict.fromkeys(n for k in kept for n in k))
        if numbers:
            out.append(text[position:start])
            out.append("".join(_mark(n, link) for n in numbers) if link and all(link(n) for n in numbers)
                       else "[" + ", ".join(map(str, numbers)) + "]")
            position = end
            continue
        # Removed whole: take the parentheses that held only this cluster, and the space before it.
        before, after = start, end
        opening = text.rfind("(", max(position, start - 3), start)
        if opening != -1 and not text[opening + 1:start].strip(_SPACE):
            closing = end + len(text[end:end + 3]) - len(text[end:end + 3].lstrip(_SPACE))
            if text[closing:closing + 1] == ")":
                before, after = opening, closing + 1
        head = text[position:before]
        following = text[after:after + 1]
        if head.endswith(tuple(_SPACE)) and (following == "" or following in _SPACE or following in _CLOSING):
            head = head.rstrip(_SPACE)
        elif (head == "" or head.endswith("\n")) and following in tuple(_SPACE):
            after += len(text[after:]) - len(text[after:].lstrip(_SPACE))
        out.append(head)
        position = after
    out.append(text[position:])
    return "".join(out)


def source_name(title: str, heading: str) -> str:
    """What a passage is called: its document's title, and the heading it is under when that differs."""
    return title + (f" — {heading}" if heading and heading != title else "")


def shown_text(title: str, heading: str, text: str) -> str:
    """A passage as the search result shows it to the model (title, heading, text): what a citation claims."""
    where = source_name(title, heading)
    return f"{where}\n\n{text}" if where else text


def named_definitions(text: str, sources: Mapping[int, Source], layout: Layout | None = None) -> str:
    """The text with each footnote definition of a retrieved passage naming that passage, in Skilldesk's
    words: a definition lists a source, and what the model wrote after `[n]:` is shown as no source."""
    out, position = [], 0
    for citation in find_citations(text, layout):
        source = sources.get(citation.numbers[0]) if citation.form == "definition" else None
        if source is None:
            continue
        line = text[citation.start:citation.end]
        found = DEFINITION.match(line)
        if found is None:
            continue
        out += [text[position:citation.start], line[:found.start("rest")], source_name(source.title, source.heading),
                "\n" if line.endswith("\n") else ""]
        position = citation.end
    out.append(text[position:])
    return "".join(out)


@dataclass
class Source:
    number: int
    passage_id: int
    document_id: int
    title: str
    heading: str
    text: str = ""  # the passage as the model was shown it (shown_text): what a citation of it claims


@dataclass
class TurnSources:
    """The passages retrieved in this turn, numbered in order of retrieval, and what was searched."""

    sources: dict[int, Source] = field(default_factory=dict)
    searches: list[str] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)


def cited(text: str) -> list[int]:
    """The citation numbers in a text, in order of first appearance (numbers too long to be valid left out)."""
    return list(dict.fromkeys(n for c in find_citations(text) for n in c.numbers if n is not None))


def valid_citations(text: str, turn: TurnSources) -> list[int]:
    """The cited numbers that name a passage retrieved in this turn."""
    return [number for number in cited(text) if number in turn.sources]


def strip_invalid(text: str, turn: TurnSources) -> str:
    """Remove citations of passages not retrieved in this turn (invented, or from an earlier turn)."""
    return rewrite_citations(text, lambda _citation, number: number in turn.sources).strip()


def no_evidence_answer(turn: TurnSources) -> str:
    searched = ", ".join(f"“{query}”" for query in turn.searches) or "nothing"
    where = ", ".join(turn.bases) or "no knowledge base"
    return (f"{NO_EVIDENCE} I searched {where} for {searched} and found no passage that supports an answer; "
            "that is not evidence either way about whether it exists.")


def linked(text: str, turn: TurnSources, url_for_passage: Callable[[int], str]) -> str:
    """Turn each valid citation into a Markdown link to its passage page; leave the others as written (but for a
    number too long to name any passage, which is removed)."""
    def link(number: int) -> str | None:
        return url_for_passage(turn.sources[number].passage_id) if number in turn.sources else None

    return rewrite_citations(text, lambda _citation, _number: True, link)
