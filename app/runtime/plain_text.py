"""Plain text from Markdown, and the first words of a text: for places that show no markup (titles)."""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

# What no plain title ends with: sentence punctuation and the dashes of a rule or a separator.
TRAILING = ".,;:!?-–—"


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def plain_text(markdown: str) -> str:
    """Return the words of a Markdown text without its markup, on one line.

    Emphasis, headings, links, list markers and code marks go, their words stay; rules ("---") and
    images go entirely; each block is a sentence of its own.
    """
    blocks = []
    for token in _parser().parse(markdown or ""):
        if token.type == "inline":
            blocks.append(_inline_text(token.children or []))
        elif token.type in ("code_block", "fence"):
            blocks.append(token.content)
    return " ".join(" ".join(blocks).split())


def _inline_text(children: list[Token]) -> str:
    parts = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def first_words(text: str, limit: int = 40) -> str:
    """Cut text at a word boundary to at most `limit` characters, without ending punctuation."""
    words = re.sub(r"\s+", " ", text).strip().split(" ")
    out = ""
    for word in words:
        candidate = f"{out} {word}".strip()
        if len(candidate) > limit:
            break
        out = candidate
    if not out:
        out = text.strip()[:limit]
    return out.rstrip(TRAILING).rstrip()
