"""How an evaluation compares texts: by their words, whatever the typography, the case or the markup around them.

A claim is "shown" when its words appear, in order and contiguous, in a text; a true statement is
"kept" the same way. Words are compared after Unicode normalisation (NFKC: full-width forms become
plain letters), with typographic apostrophes and quotes as plain ones and case folded, so `I’ve
created` matches `I've created`, and Markdown (lists, tables, code fences, emphasis) or the chat's
rendered HTML around a sentence does not hide it. A linked citation (`[\\[1\\]](/knowledge/passages/4)`,
as the knowledge skill writes it) reads as the `[1]` the model wrote.
"""

from __future__ import annotations

import re
import unicodedata

QUOTES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"', "«": '"', "»": '"'})
LINKED_CITATION = re.compile(r"\[\\\[(\d+)\\\]\]\([^)\s]*\)")
WORD = re.compile(r"\w+")


def normal(text: str) -> str:
    """The text in NFKC, with plain quotes, case folded and whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text or "").translate(QUOTES).casefold().split())


def unlinked(text: str) -> str:
    """The text with each linked citation back to the `[n]` the model wrote."""
    return LINKED_CITATION.sub(r"[\1]", text or "")


def words(text: str) -> str:
    """The text's words, one space apart (punctuation, quotes and markup left out)."""
    return " ".join(WORD.findall(normal(unlinked(text))))


def holds(text: str, phrase: str) -> bool:
    """Tell whether the phrase's words appear, in order and contiguous, in the text."""
    wanted = words(phrase)
    return bool(wanted) and f" {wanted} " in f" {words(text)} "


def contains(text: str, phrase: str) -> bool:
    """Tell whether the text holds the phrase, compared normalised (case, quotes, full-width forms, spaces)."""
    return normal(phrase) in normal(text)
