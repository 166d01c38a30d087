"""Hostile answers: huge, full of control characters, bidi marks, lone surrogates, emoji or broken Markdown.

The engine stays linear in the answer's length (counted in Python calls, not timed: the time is
benchmarks/claims.py's), never fails, and reports spans in the answer as given.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from app.policy import claims
from app.policy.claims import Change, check_claims, detect_language, find_claims

LEDGER = [Change("create_table", "create", "table", "Contacts", None, "succeeded")]


def calls(run: Callable[[], object]) -> int:
    """Count the Python function calls one run makes (a measure of work that no machine load changes)."""
    count = 0

    def profile(_frame, event, _arg):
        nonlocal count
        if event == "call":
            count += 1

    claims._reading.cache_clear()
    claims._claims.cache_clear()
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


PIECES = {
    "claims": "I have created the table Contacts and added 3 rows. ",
    "markdown": "- Contacts: created\n| Contacts | ✅ |\n```\nLeads: updated\n```\n",
    "one word": "a" * 50,
    "quotes": "\"'`«»“",
    "apostrophes": "l'ho j'ai c'est ",
    "spaces": " " * 50,
    "newlines": "\n" * 20,
    "emoji": "✅🎉❌👍 ",
    "bidi": "\u202eI created\u202c the table \u2066Contacts\u2069. ",
    "controls": "\x00I\x01 created\x07 the\x1b table\x7f. ",
    "pipes": "|" * 30,
    "dashes": "- - — – ",
    "colons": ":" * 30,
    "addresses": "a@b@c.d@",
    "links": "[x](http://example.com/a) https://example.com/",
    "numbers": "1.2.3.4,5,6 2026-01-02 10:30 ",
    "mixed languages": "Ho creato la tabella. J'ai créé la table. Ich habe erstellt. ",
}


@pytest.mark.parametrize("name", PIECES)
def test_the_work_grows_linearly_with_the_answer(name):
    piece = PIECES[name]
    small = piece * max(1, 2_000 // len(piece))
    large = small * 10
    check_claims(small, LEDGER)  # warm the word caches
    small_calls = calls(lambda: (check_claims(small, LEDGER), claims.hands_off(small), claims.says_unfinished(small)))
    large_calls = calls(lambda: (check_claims(large, LEDGER), claims.hands_off(large), claims.says_unfinished(large)))
    assert large_calls <= 12 * max(small_calls, 50), (small_calls, large_calls)


def test_a_100_000_character_answer_is_read_whole():
    text = "I have created the table Contacts and added 3 rows. " * 2_000
    assert len(text) > 100_000
    findings = check_claims(text, LEDGER)
    assert len(findings) == 4_000
    assert [f.verdict for f in findings[:2]] == ["supported", "unsupported"]


@pytest.mark.parametrize("text", [
    "", " ", "\n\n\n", "✅✅✅", "🎉🎉🎉", "❌", "|||", "```", "```\n", "> ", "#", "- ", "1.", "\"", "'", "`unclosed",
    "\ud800\udfff", "\x00" * 100, "\u200b\u200c\u200d\u2060\ufeff", "\u202e\u202d\u202c", "é" * 1000,
    "9" * 1_000 + " rows added", "|---|---|\n|---|", "- [ ] task\n- [x] done", "**" * 500, "[" * 500 + "]" * 500,
    "I" * 10_000, "I have " * 5_000, "the table " * 5_000, "no no no not never " * 1_000,
])
def test_odd_input_never_fails(text):
    findings = check_claims(text, LEDGER)
    for finding in findings:
        start, end = finding.claim.span
        assert 0 <= start <= end <= len(text) and text[start:end] == finding.claim.text
    assert detect_language(text) in claims.LEXICON.languages


def test_only_emoji_claims_nothing():
    assert find_claims("✅ ✅ 🎉 👍") == []


def test_invisible_and_control_characters_do_not_hide_a_claim():
    for text in ("I\u200b have cre\u200bated the table Contacts.", "\u202eI have created the table Contacts.\u202c",
                 "I\x00 have\x07 created the table Contacts.", "I have\u00a0created the table\u3000Contacts.",
                 "I have created the table Conta\u0301cts."):
        claim, = find_claims(text)
        assert (claim.action, claim.object) == ("create", "table")
        assert text[claim.span[0]:claim.span[1]] == claim.text


def test_a_span_points_into_the_answer_as_given_after_normalisation():
    text = "Ｄｏｎｅ？ No: ﬁrst I’ve créé… non. J’ai créé la table « Contacts »."
    claim, = find_claims(text)
    assert claim.target == "Contacts" and claim.language == "fr"
    assert text[claim.span[0]:claim.span[1]] == claim.text and claim.text.startswith("J’ai créé")
