"""How an evaluation compares texts: a claim by its words, a true statement as it was written.

A claim is "shown" when its words appear, in order and contiguous, in a text (`holds`). Words are
compared after Unicode normalisation (NFKC: full-width forms become plain letters), with typographic
apostrophes and quotes as plain ones and case folded, so `I’ve created` matches `I've created`, and
Markdown (lists, tables, code fences, emphasis) or the chat's rendered HTML around a sentence does not
hide it. A true statement is "kept" when it is there as written (`written`: the same characters, spaces
aside), or word for word in a rendered page. Either way a linked citation
(`[\\[1\\]](/knowledge/passages/4)`, as the knowledge skill writes it) reads as the `[1]` the model wrote.
"""

from __future__ import annotations

import re
import unicodedata

from app.knowledge.word_tables import UNVERIFIED_MARK

QUOTES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"', "«": '"', "»": '"'})
LINKED_CITATION = re.compile(r"\[\\\[(\d+)\\\]\]\([^)\s]*\)")
WORD = re.compile(r"\w+")
# A sentence (or list item) that ends with one of the review's "unverified" markers, in any language.
MARKED = re.compile("[^.!?\n]*(?:" + "|".join(re.escape(mark) for mark in UNVERIFIED_MARK.values()) + ")[.!?]?")


def normal(text: str) -> str:
    """The text in NFKC, with plain quotes, case folded and whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text or "").translate(QUOTES).casefold().split())


def unlinked(text: str) -> str:
    """The text with each linked citation back to the `[n]` the model wrote."""
    return LINKED_CITATION.sub(r"[\1]", text or "")


def words(text: str) -> str:
    """The text's words, one space apart (punctuation, quotes and markup left out)."""
    return " ".join(WORD.findall(normal(unlinked(text))))


def unmarked(text: str) -> str:
    """The text without the statements the answer review marked as unverified ("… (unverified).").

    Such a statement is shown, but as what no retrieved passage supports, never as a fact (the knowledge
    skill's "mark them" policy): an evaluation does not count it as an unsupported claim shown.
    """
    return MARKED.sub(" ", text or "")


def holds(text: str, phrase: str) -> bool:
    """Tell whether the phrase's words appear, in order and contiguous, in the text."""
    wanted = words(phrase)
    return bool(wanted) and f" {wanted} " in f" {words(text)} "


def written(text: str, phrase: str) -> bool:
    """Tell whether the text holds the phrase as written: the same characters, spaces and linked citations aside."""
    wanted = " ".join(unlinked(phrase).split())
    return bool(wanted) and wanted in " ".join(unlinked(text).split())


def contains(text: str, phrase: str) -> bool:
    """Tell whether the text holds the phrase, compared normalised (case, quotes, full-width forms, spaces)."""
    return normal(phrase) in normal(text)
