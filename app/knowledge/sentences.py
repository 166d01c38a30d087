"""An answer's sentences, each with the citations that belong to it.

A citation belongs to the sentence it ends ("… at 02:00 [1]." and "… at 02:00. [1]" alike). Code,
blockquotes and footnote definitions are no sentences; a heading and a table row are one sentence each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.knowledge.answer_layout import Layout, layout_of
from app.knowledge.citations import DEFINITION, Citation, find_citations

# The end of a sentence: its punctuation, closing quotes or brackets, then space and no lower-case letter.
_END = re.compile(r"[.!?…。！？]+[\"'”’)\]*_]*+(?=\s+[^\sa-zà-ÿ]|\s*$)")
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "approx.", "pp.", "fig.", "ca.", "z.b.", "d.h.")
_LIST_MARKER = re.compile(r"^[ \t]*+(?:[-*+]|\d{1,9}[.)])[ \t]++", re.MULTILINE)
_HEADING_MARKER = re.compile(r"^[ \t]*+#{1,6}[ \t]*+|[ \t]+#+[ \t]*$", re.MULTILINE)
# Emphasis in pairs only: the underscore of dt_<name> or min_score is not markup.
_MARKUP = re.compile(r"(?<![\w*~])(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1(?![\w*~])")
_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_LINK_TEXT = re.compile(r"!?\[((?:[^\[\]\\\n]|\\.)*+)\]\([^()\n]*+\)")


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence's span in the answer, its words (citations and markup taken out) and its citations."""

    start: int
    end: int
    text: str
    citations: tuple[Citation, ...]
    kind: str  # "paragraph", "heading" or "table_row"
    cells: tuple[str, ...] = ()  # a table row's cells, in plain text

    @property
    def numbers(self) -> list[int]:
        """The passage numbers it cites, each once, in order (invalid long numbers left out)."""
        return list(dict.fromkeys(n for c in self.citations for n in c.numbers if n is not None))


def split_sentences(text: str, layout: Layout | None = None,
                    citations: list[Citation] | None = None) -> list[Sentence]:
    """Return the sentences of an answer's prose, in order."""
    layout = layout or layout_of(text)
    citations = find_citations(text, layout) if citations is None else citations
    marks = [c for c in citations if c.form != "definition"]
    sentences: list[Sentence] = []
    for block in layout.blocks:
        if block.kind != "paragraph":
            sentences.append(_sentence(text, block.start, block.end, marks, block.kind))
            continue
        for start, end in _prose_lines(text, block.start, block.end):
            for piece_start, piece_end in _pieces(text, start, end, layout, marks):
                sentences.append(_sentence(text, piece_start, piece_end, marks, "paragraph"))
    return [s for s in sentences if s.text or s.citations]


def _prose_lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The block without its footnote definition lines (they list sources, they claim nothing)."""
    spans, position = [], start
    for match in DEFINITION.finditer(text, start, end):
        if match.start() > position:
            spans.append((position, match.start()))
        position = match.end()
    if position < end:
        spans.append((position, end))
    return spans


def _pieces(text: str, start: int, end: int, layout: Layout, marks: list[Citation]) -> list[tuple[int, int]]:
    pieces, position = [], start
    for match in _END.finditer(text, start, end):
        stop = match.end()
        if layout.overlaps_protected(match.start(), stop) or _abbreviation(text, start, match.start(), stop):
            continue
        stop = _citations_after(text, stop, end, marks)
        pieces.append((position, stop))
        position = stop
    if text[position:end].strip():
        pieces.append((position, end))
    return pieces


def _abbreviation(text: str, start: int, at: int, stop: int) -> bool:
    word = text[max(start, at - 8):stop].split()[-1].lower() if text[max(start, at - 8):stop].split() else ""
    return word.lstrip("(") in _ABBREVIATIONS


def _citations_after(text: str, position: int, end: int, marks: list[Citation]) -> int:
    """Extend a sentence over the citations written after its full stop ("… at 02:00. [1][2]")."""
    for citation in marks:
        if citation.start < position:
            continue
        if citation.start >= end or text[position:citation.start].strip(" \t,;"):
            break
        position = citation.end
    return position


def _sentence(text: str, start: int, end: int, marks: list[Citation], kind: str) -> Sentence:
    start += len(text[start:end]) - len(text[start:end].lstrip())
    end -= len(text[start:end]) - len(text[start:end].rstrip())
    own = tuple(c for c in marks if start <= c.start and c.end <= end)
    pieces, position = [], start
    for citation in own:
        pieces.append(text[position:citation.start])
        position = citation.end
    pieces.append(text[position:end])
    words = "".join(pieces)
    words = _LINK_TEXT.sub(r"\1", words)
    cells: tuple[str, ...] = ()
    if kind == "table_row":
        cells = tuple(_tidy(_plain(cell)) for cell in words.strip().strip("|").split("|"))
        words = "" if not "".join(cells).replace("-", "").replace(":", "").strip() else " ".join(cells)
        cells = cells if words else ()  # the delimiter row is no sentence
    else:
        words = _HEADING_MARKER.sub(" ", words) if kind == "heading" else _LIST_MARKER.sub("", words)
        words = _tidy(_plain(words))
    return Sentence(start, end, words, own, kind, cells)


def _plain(words: str) -> str:
    """Emphasis marks out, code kept as written (`http_*` stays http_*, **bold** becomes bold)."""
    out, position = [], 0
    for match in _CODE.finditer(words):
        out.append(_MARKUP.sub(r"\2", words[position:match.start()]))
        out.append(match.group(2).strip())
        position = match.end()
    out.append(_MARKUP.sub(r"\2", words[position:]))
    return "".join(out).replace("`", "")


def _tidy(words: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(words.split()))
