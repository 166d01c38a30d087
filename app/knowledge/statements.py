"""Which sentences of an answer state something that needs a source, and which repeat the sources' words.

Not a claim: a heading, a table's header row, a question, a lead-in ("Here is what I found:"), a short
greeting or pointer ("See [2] for the details."), a sentence about the sources ("The documents do not say
…", unless it goes on with "but …") or about the question ("You asked whether …"), a search result's header
pasted as it came ("[1] (passage 12) …"). The phrases are in word_tables.py, per language.
"""

from __future__ import annotations

import re
from functools import lru_cache

from app.knowledge.citations import NO_EVIDENCE
from app.knowledge.sentences import Sentence, split_sentences
from app.knowledge.support_terms import sentence_terms
from app.knowledge.word_tables import (
    ABOUT_THE_QUESTION,
    ABOUT_THE_SOURCES,
    CONTRASTS,
    FIRST_PERSON,
    GERMAN_NEGATIONS,
    GREETINGS,
    HEDGES,
)

_RESULT_HEADER = re.compile(r"\(passage \d{1,12}\)")  # what search_knowledge writes after [n]


def is_claim(sentence: Sentence, first_row: bool = False) -> bool:
    """Whether a sentence states something that needs a source: not a heading, a table's header, a question,
    a lead-in ("Here is what I found:"), a greeting, a sentence about the sources ("The documents do not say
    …") or about the question ("You asked whether …"), a search result's header pasted as it came ("[1]
    (passage 12) Backups — Restore"), nor one with no content word at all."""
    text = sentence.text.strip()
    if sentence.kind == "heading" or (sentence.kind == "table_row" and first_row) or not text:
        return False
    if text.startswith(NO_EVIDENCE) or text.endswith(("?", ":", "？")) or _RESULT_HEADER.search(text):
        return False
    terms = sentence_terms(text)
    if not (terms.words or terms.numbers or terms.names or terms.identifiers):
        return False
    lowered = f" {text.lower().replace('’', chr(39))} "
    # Every language's table: these phrases are distinctive, and a short sentence's language is a guess.
    if len(text.split()) <= 8 and _greets(lowered.strip()):
        return False
    contrasted = any(word in lowered for words in CONTRASTS.values() for word in words)
    about_sources = any(_leads(lowered, phrase, SOURCES_LEAD_WORDS) for language, phrases in ABOUT_THE_SOURCES.items()
                        if language != "de" for phrase in phrases)
    # German negates late ("Die Dokumente sagen nichts über …"): its phrases name the subject only.
    about_sources |= any(_leads(lowered, phrase, SOURCES_LEAD_WORDS) for phrase in ABOUT_THE_SOURCES["de"]) and any(
        f" {word} " in lowered or f" {word}." in lowered for word in GERMAN_NEGATIONS)
    if about_sources and not contrasted:
        return False
    return not any(_leads(lowered, phrase, QUESTION_LEAD_WORDS, whole=True)
                   for phrases in ABOUT_THE_QUESTION.values() for phrase in phrases)


# A sentence is about the sources or the question when it says so at its start ("Unfortunately, the documents
# do not say …", "You asked whether …"); the phrase later on ("Tables are deleted nightly, which the documents
# do not dispute.") or a second clause after it ("To answer your question, tables are deleted nightly.") claims.
SOURCES_LEAD_WORDS = 3
QUESTION_LEAD_WORDS = 3
_SECOND_CLAUSE = re.compile(r"[,;—–]|\s-\s")


def _leads(lowered: str, phrase: str, words: int, whole: bool = False) -> bool:
    """Whether the phrase opens the sentence (after at most `words` words) and, when `whole`, no second
    clause follows it."""
    index = lowered.find(phrase)
    if index < 0 or len(lowered[:index].split()) > words:
        return False
    return not (whole and _SECOND_CLAUSE.search(lowered, index + len(phrase)))


def _greets(lowered: str) -> bool:
    """Whether the sentence opens with a greeting as a whole word ("Hi!", not "High availability…")."""
    return any(lowered.startswith(word) and not lowered[len(word):len(word) + 1].isalnum()
               for greetings in GREETINGS.values() for word in (greeting.strip() for greeting in greetings))


def about_the_assistant(text: str) -> bool:
    """Whether a sentence is in the first person: what the assistant did ("I created the table Contacts"),
    which the review of actions checks against the turn's record, not the documents."""
    lowered = text.lower().replace("’", "'")
    if lowered.startswith(tuple(hedge for hedges in HEDGES.values() for hedge in hedges)):
        return False  # "I think they are encrypted": a claim about the world, hedged
    return lowered.startswith(tuple(opener for openers in FIRST_PERSON.values() for opener in openers))


def _plain(text: str) -> str:
    return " ".join(text.lower().split())


@lru_cache(maxsize=512)
def passage_words(passage: str) -> str:
    """A passage's sentences in plain lower-case words, for quoted_in."""
    return " ".join(_plain(sentence.text) for sentence in split_sentences(passage))


def quoted_in(sentence: str, passages: str) -> bool:
    """Whether a sentence of some length is word for word in the retrieved passages (a cut end allowed)."""
    plain = _plain(sentence).removesuffix("…").removesuffix("...").rstrip(" .")
    return len(plain) >= 20 and plain in passages
