"""Cut a document into overlapping passages at paragraph, then line, then word boundaries.

Each passage knows its offsets in the document and the section heading it falls under; what gets embedded
(and indexed for words) is the document title, the heading and the passage, so that a passage about
"Settings" of the memory skill is found by "memory settings". A long passage is embedded in pieces
(`pieces`), each with the title and heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Bump when the cutting rules or the embedded or indexed text change: documents indexed by an older chunker are
# indexed again automatically (see app/knowledge/indexing.py). 3: passages' names (app/knowledge/names.py) and
# vectors of pieces.
CHUNKER_VERSION = 3

# What one vector covers. MiniLM reads 256 word pieces and drops the rest (103 of the 267 passages of docs/
# were longer), and a shorter text embeds sharper: a passage is embedded in pieces of at most this many
# characters and found by its best piece (benchmarks/retrieval.py: semantic recall@5 0.77 -> 0.79, MRR 0.59 ->
# 0.63 on docs/), for the same number of tokens embedded.
PIECE_CHARS = 500

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
# Separators, strongest first: a passage ends after the last one found in its second half.
_BOUNDARIES = ("\n\n", "\n", " ")


@dataclass(frozen=True, slots=True)
class Chunk:
    start: int
    end: int
    text: str
    heading: str


def chunk(text: str, size: int = 1000, overlap: int = 150) -> list[Chunk]:
    """Return passages of at most `size` characters, each starting about `overlap` characters before the
    previous one ends; cuts fall at the strongest boundary (paragraph, line, word) in a passage's second half."""
    if size < 100:
        raise ValueError("chunk size must be at least 100 characters")
    if not 0 <= overlap < size // 2:
        raise ValueError("overlap must be at least 0 and under half the chunk size")
    headings = [(match.start(), match.group(2).strip()) for match in _HEADING.finditer(text)]
    chunks: list[Chunk] = []
    start = _skip_space(text, 0)
    while start < len(text):
        end = _cut(text, start, size)
        piece_end = end
        while piece_end > start and text[piece_end - 1].isspace():
            piece_end -= 1
        if piece_end > start:
            chunks.append(Chunk(start, piece_end, text[start:piece_end], _heading_at(headings, start)))
        if end >= len(text):
            break
        start = _next_start(text, start, end, overlap)
    return chunks


def _cut(text: str, start: int, size: int) -> int:
    limit = start + size
    if limit >= len(text):
        return len(text)
    window = text[start:limit]
    for separator in _BOUNDARIES:
        found = window.rfind(separator, size // 2)
        if found != -1:
            return start + found + len(separator)
    return limit  # one unbroken word longer than half a passage: cut inside it


def _next_start(text: str, start: int, end: int, overlap: int) -> int:
    """Start the next passage `overlap` characters before `end`, moved forward to the start of a word."""
    candidate = max(end - overlap, start + 1)
    if candidate < end and candidate > 0 and not text[candidate - 1].isspace():
        space = text.find(" ", candidate, end)
        newline = text.find("\n", candidate, end)
        breaks = [position for position in (space, newline) if position != -1]
        candidate = min(breaks) + 1 if breaks else end
    return _skip_space(text, candidate)


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _heading_at(headings: list[tuple[int, str]], position: int) -> str:
    current = ""
    for offset, title in headings:
        if offset > position:
            break
        current = title
    return current


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """A passage's text cut for embedding: itself when short enough, else pieces of at most `size` characters."""
    if len(text) <= size:
        return [text]
    return [piece.text for piece in chunk(text, size, 0)]


def embedded_text(title: str, heading: str, text: str) -> str:
    """What a passage is embedded and indexed as: the document title, its section heading, the passage."""
    lines = [title.strip()]
    if heading and heading.strip() != title.strip():
        lines.append(heading.strip())
    lines.append(text)
    return "\n".join(line for line in lines if line)
