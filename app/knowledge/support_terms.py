"""The terms of a sentence or a passage that the support check compares: content words, numbers, names and
identifiers, in the sentence's language (word_tables.py).

A content word matches by its first five letters after light stemming ("indexing", "indexed" and "index"
match; so do the cognates "memorie" and "memories"). A number, a name or an identifier must be in the
passage as it is: they are what a sentence most often gets wrong.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from app.knowledge.word_tables import (
    CAPITALISES_NOUNS,
    LANGUAGES,
    NOT_NUMBERS,
    NUMBER_WORDS,
    STOP_WORDS,
)

STEM = 5
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "`": " "})
_EDGES = "\"'“”„«»()[]{}<>*_,.;:!?¡¿…—–|#~"
_ELISION = re.compile(r"^(?:l|d|j|m|n|s|t|c|qu|dell|all|dall|nell|sull|un)'", re.IGNORECASE)
_THOUSANDS = re.compile(r"^\d{1,3}(?:[.,\u202f\u00a0 ]\d{3})+$")
_NUMBERISH = re.compile(r"^[+-]?\d[\d.,:]*%?$")
_DIGITS = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?!\w)")  # not the 5 of FTS5
_IDENTIFIER_CHARS = re.compile(r"[_/<>@=(){}\\]|\w[.:]\w")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]|[A-Z]{2}|\d[A-Za-z]|[A-Za-z]\d")
_ENGLISH_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s")
_MAX_TOKENS = 400  # a "sentence" longer than this is checked on its first 400 words


def normalise(text: str) -> str:
    """NFKC, straight apostrophes, and no backticks: the form every comparison uses."""
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def stem(word: str) -> str:
    """The first letters of a word without accents and common English suffixes."""
    word = _fold(word.lower())
    for suffix in _ENGLISH_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    return word[:STEM]


def number(token: str) -> str:
    """A number as one spelling: no thousands separators, a decimal point, no leading zeros, no %."""
    token = token.rstrip("%")
    if _THOUSANDS.match(token):
        token = re.sub(r"\D", "", token)
    token = token.replace(",", ".")
    head, colon, rest = token.partition(":")  # 02:00 is 2:00
    return (head.lstrip("0") or "0" if head.isdigit() else head) + colon + rest


@lru_cache(maxsize=4096)
def language_of(text: str) -> str:
    """The language whose stop words the text uses most (English on a tie or with none)."""
    words = re.findall(r"[^\W\d_]+", normalise(text).lower())  # "l'agente" is "l" and "agente"
    best, best_count = "en", 0
    for language in LANGUAGES:
        count = sum(word in STOP_WORDS[language] for word in words)
        if count > best_count:
            best, best_count = language, count
    return best


@dataclass(frozen=True, slots=True)
class SentenceTerms:
    """What a sentence claims, as terms: content-word stems, numbers, names and identifiers."""

    language: str
    words: frozenset[str]
    numbers: frozenset[str]
    names: frozenset[str]
    identifiers: frozenset[str]


@dataclass(frozen=True, slots=True)
class PassageTerms:
    """What a passage holds: stems, numbers (whole and in parts), its tokens and its text, lower case."""

    stems: frozenset[str]
    numbers: frozenset[str]
    tokens: frozenset[str]
    text: str


def _chunks(text: str) -> list[str]:
    out = []
    for raw in normalise(text).split()[:_MAX_TOKENS]:
        token = raw.strip(_EDGES)
        if token:
            out.append(token)
    return out


def sentence_terms(text: str, known: frozenset[str] = frozenset()) -> SentenceTerms:
    """Sort a sentence's words into what it claims; `known` names (lower case) are left out."""
    language = language_of(text)
    stop = STOP_WORDS[language] | STOP_WORDS["en"]
    number_words = NUMBER_WORDS[language]
    words: set[str] = set()
    numbers: set[str] = set()
    names: set[str] = set()
    identifiers: set[str] = set()
    for index, token in enumerate(_chunks(text)):
        lowered = token.lower()
        if lowered in known:
            continue  # the product's or the agent's own name: neither claimed nor missing
        if _NUMBERISH.match(token):
            numbers.add(number(token))
        elif _IDENTIFIER_CHARS.search(token):
            identifiers.add(lowered)
        elif _INNER_CAPITAL.search(token):
            names.add(lowered)
        elif lowered in number_words and lowered not in NOT_NUMBERS:
            numbers.add(number_words[lowered])
        else:
            for part in _ELISION.sub("", lowered).split("-"):
                part = part.strip("'")
                if len(part) < 3 or part in stop:
                    continue
                capitalised = token[:1].isupper() and index > 0 and language not in CAPITALISES_NOUNS
                if capitalised and part not in STOP_WORDS["en"]:
                    names.add(part)
                else:
                    words.add(stem(part))
    return SentenceTerms(language, frozenset(words), frozenset(numbers), frozenset(names), frozenset(identifiers))


@lru_cache(maxsize=256)
def passage_terms(text: str) -> PassageTerms:
    """Index a passage's text for sentence_terms to be looked up in."""
    normal = normalise(text)
    tokens = {token.lower() for token in _chunks(normal)}
    numbers = {number(n) for n in _DIGITS.findall(normal)}
    numbers |= {number(n) for n in re.findall(r"(?<!\w)\d+(?![^\W\d_])", normal)}  # 2 and 12 of 2–12
    numbers |= {number(t) for t in tokens if _NUMBERISH.match(t)}
    for language in LANGUAGES:
        numbers |= {NUMBER_WORDS[language][t] for t in tokens if t in NUMBER_WORDS[language]}
    stems = {stem(part) for token in tokens for part in re.split(r"[-/_.]", _ELISION.sub("", token)) if part}
    return PassageTerms(frozenset(stems), frozenset(numbers), frozenset(tokens), normal.lower())
