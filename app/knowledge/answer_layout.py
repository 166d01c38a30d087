"""Where an answer's prose is: its blocks (paragraphs, list items, headings, table rows) and the spans that
are not prose and must never be rewritten (code, quotations, links, URLs, JSON).

The blocks come from markdown-it, the parser that renders the answer (app/web/rendering.py), so what is code
here is code on screen. Inline spans are found with bounded, linear patterns: an answer of 100,000
characters is scanned in milliseconds.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt

# Never rewritten as a whole: code (fenced, indented) and blockquotes.
_PROTECTED_BLOCKS = {"fence", "code_block", "blockquote_open", "html_block"}

_CODE_RUN = re.compile(r"`+")
_LINK = re.compile(
    r"!?\[(?:[^\[\]\\\n]|\\.|\[(?:[^\[\]\\\n]|\\.)*+\])*+\]"  # link text, one level of brackets inside
    r"\((?:[^()\\\n]|\\.|\([^()\n]*+\))*+\)"  # destination and title, one level of parentheses inside
)
_AUTOLINK = re.compile(r"<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*+>")
_BARE_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>()]*+")
_JSON = re.compile(r"\{(?:[^{}\n]|\{(?:[^{}\n]|\{[^{}\n]*+\})*+\})*+\}")
_QUOTED = re.compile(r'"[^"\n]{1,500}+"|“[^“”\n]{1,500}+”|„[^„“”\n]{1,500}+[“”]|«[^«»\n]{1,500}+»')


@dataclass(frozen=True, slots=True)
class Block:
    """A run of prose: `kind` is "paragraph" (list items too), "heading" or "table_row"."""

    kind: str
    start: int
    end: int


@dataclass
class Layout:
    """An answer's prose blocks and its protected spans (sorted, not overlapping)."""

    text: str
    blocks: list[Block] = field(default_factory=list)
    protected: list[tuple[int, int]] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list, repr=False)

    def overlaps_protected(self, start: int, end: int) -> bool:
        """Whether any character of text[start:end] is in a protected span."""
        index = bisect_right(self._starts, start) - 1
        for span_start, span_end in self.protected[max(index, 0):]:
            if span_start >= end:
                return False
            if span_end > start:
                return True
        return False

    def part(self, start: int, end: int) -> Layout:
        """The layout of text[start:end] (its protected spans; no blocks), without parsing it again."""
        spans = [(max(s, start) - start, min(e, end) - start) for s, e in self.protected if s < end and e > start]
        return Layout(self.text[start:end], [], spans, [s for s, _ in spans])


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts += [match.end() for match in re.finditer("\n", text)]
    return starts


def layout_of(text: str) -> Layout:
    """Return the blocks and protected spans of an answer written in Markdown."""
    lines = _line_starts(text)

    def span(line_range: list[int]) -> tuple[int, int]:
        first, last = line_range
        end = lines[last] if last < len(lines) else len(text)
        return lines[first], end

    protected: list[tuple[int, int]] = []
    blocks: list[Block] = []
    quoted_until = -1  # the end line of the blockquote being skipped
    opened = ""  # the type of the token that opened the current inline content
    for token in _parser().parse(text):
        if token.map is None:
            continue
        if token.map[0] < quoted_until:
            continue
        if token.type in _PROTECTED_BLOCKS:
            protected.append(span(token.map))
            if token.type == "blockquote_open":
                quoted_until = token.map[1]
        elif token.type == "tr_open":
            blocks.append(Block("table_row", *span(token.map)))
        elif token.type == "inline" and opened in ("paragraph_open", "heading_open"):
            blocks.append(Block("heading" if opened == "heading_open" else "paragraph", *span(token.map)))
        opened = token.type
    for block in blocks:
        protected += _inline_spans(text, block.start, block.end)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(protected):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return Layout(text, blocks, merged, [start for start, _ in merged])


def _inline_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Code spans, links, URLs, JSON and quotations inside one block."""
    spans = _code_spans(text, start, end)
    for pattern in (_LINK, _AUTOLINK, _BARE_URL, _JSON, _QUOTED):
        spans += [(match.start(), match.end()) for match in pattern.finditer(text, start, end)]
    return spans


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Backtick code spans as CommonMark reads them: a run of n backticks closes at the next run of n."""
    spans = []
    runs = list(_CODE_RUN.finditer(text, start, end))
    index = 0
    while index < len(runs):
        opening = runs[index]
        if index and text[opening.start() - 1:opening.start()] == "\\":
            index += 1
            continue
        size = len(opening.group())
        closing = next((j for j in range(index + 1, len(runs)) if len(runs[j].group()) == size), None)
        if closing is None:
            index += 1
            continue
        spans.append((opening.start(), runs[closing].end()))
        index = closing + 1
    return spans

