"""The word tables per language: a contributor who adds a language adds it to every table."""

from __future__ import annotations

from app.knowledge import word_tables
from app.knowledge.support_terms import normalise

TABLES = {"STOP_WORDS", "NUMBER_WORDS", "GREETINGS", "ABOUT_THE_SOURCES", "ABOUT_THE_QUESTION", "NEGATIONS",
          "CONTRASTS", "UNVERIFIED_MARK", "FIRST_PERSON", "HEDGES"}


def test_every_language_has_every_table():
    for name in TABLES:
        table = getattr(word_tables, name)
        missing = set(word_tables.LANGUAGES) - set(table)
        assert not missing, f"word_tables.{name} has no entry for {sorted(missing)}: add one per language"


def test_the_tables_are_written_as_they_are_compared():
    for name in TABLES - {"UNVERIFIED_MARK"}:
        for language, entries in getattr(word_tables, name).items():
            for entry in entries:
                assert entry == normalise(entry).lower(), (
                    f"word_tables.{name}[{language!r}] has {entry!r}: write it in lower case, apostrophes straight")


def test_number_words_are_numbers_and_markers_plain_text():
    for language, words in word_tables.NUMBER_WORDS.items():
        assert all(value.isdigit() for value in words.values()), language
        assert words.get(next(iter(words))) == "0"
    for language, mark in word_tables.UNVERIFIED_MARK.items():
        assert mark.startswith("(") and mark.endswith(")") and not set(mark) & set("[]<>*_`"), language
