"""The one citation parser, on a table of the forms models write: what it finds, what it keeps and links,
what it removes cleanly, and what it never touches (code, JSON, quotations, links)."""

from __future__ import annotations

import pytest

from app.knowledge.citations import (
    MAX_DIGITS,
    Source,
    TurnSources,
    cited,
    find_citations,
    linked,
    no_evidence_answer,
    rewrite_citations,
    strip_invalid,
    valid_citations,
)

HUGE = "1" + "0" * 30  # 10^30
HUNDREDS = "7" * 400

# (answer, numbers found in order (None: too many digits), the answer with only 1, 2 and 3 valid)
FORMS = [
    ("Backups run nightly [1].", [(1,)], "Backups run nightly [1]."),
    ("Backups run nightly [7].", [(7,)], "Backups run nightly."),
    ("Backups run nightly [1, 2].", [(1, 2)], "Backups run nightly [1, 2]."),
    ("Backups run nightly [1,7].", [(1, 7)], "Backups run nightly [1]."),
    ("Backups run nightly [2; 9].", [(2, 9)], "Backups run nightly [2]."),
    ("Backups run nightly [1-3].", [(1, 2, 3)], "Backups run nightly [1-3]."),
    ("Backups run nightly [1–3].", [(1, 2, 3)], "Backups run nightly [1–3]."),  # en dash
    ("Backups run nightly [2-5].", [(2, 3, 4, 5)], "Backups run nightly [2, 3]."),
    ("Backups run nightly [1-1000000].", [(None,)], "Backups run nightly."),  # not a range: cites nothing
    ("Backups run nightly [1][2].", [(1,), (2,)], "Backups run nightly [1][2]."),
    ("Backups run nightly [1][8].", [(1,), (8,)], "Backups run nightly [1]."),
    ("Backups run nightly [8][1].", [(8,), (1,)], "Backups run nightly [1]."),
    ("Backups run nightly [1], [8].", [(1,), (8,)], "Backups run nightly [1]."),
    ("Backups run nightly [8] [9].", [(8,), (9,)], "Backups run nightly."),
    ("Backups run nightly 【1】.", [(1,)], "Backups run nightly 【1】."),
    ("Backups run nightly 【9】.", [(9,)], "Backups run nightly."),
    ("Backups run nightly 【1, 9】.", [(1, 9)], "Backups run nightly [1]."),
    ("Backups run nightly [1†source].", [(1,)], "Backups run nightly [1†source]."),
    ("Backups run nightly [4†L10-L20].", [(4,)], "Backups run nightly."),
    ("Backups run nightly 【2:0†source】.", [(2,)], "Backups run nightly 【2:0†source】."),
    ("Backups run nightly 【4:2†guide.md】.", [(4,)], "Backups run nightly."),
    ("Backups run nightly^1.", [(1,)], "Backups run nightly^1."),
    ("Backups run nightly.^2 Restore works.", [(2,)], "Backups run nightly.^2 Restore works."),
    ("Backups run nightly^9.", [(9,)], "Backups run nightly."),
    ("Backups run nightly^[1].", [(1,)], "Backups run nightly^[1]."),
    ("Backups run nightly[^1].\n\n[^1]: Backups guide", [(1,), (1,)],
     "Backups run nightly[^1].\n\n[^1]: Backups guide"),
    ("Backups run nightly[^5].\n\n[^5]: Invented guide\n", [(5,), (5,)], "Backups run nightly.\n\n"),
    ("Nightly [1] and weekly [6].\n\n[1]: Backups — Restore\n[6]: Made up", [(1,), (6,), (1,), (6,)],
     "Nightly [1] and weekly.\n\n[1]: Backups — Restore\n"),
    ("Backups run nightly (see [7]).", [(7,)], "Backups run nightly (see)."),
    ("Backups run nightly ([7]).", [(7,)], "Backups run nightly."),
    ("Backups run nightly ([1]).", [(1,)], "Backups run nightly ([1])."),
    ("[7] Backups run nightly.", [(7,)], "Backups run nightly."),
    ("Backups [7], restores [1] and exports [8] run nightly.", [(7,), (1,), (8,)],
     "Backups, restores [1] and exports run nightly."),
    ("Backups run nightly [7]\nand restore on demand [1].", [(7,), (1,)],
     "Backups run nightly\nand restore on demand [1]."),
    ("Backups run nightly [ 2 ].", [(2,)], "Backups run nightly [ 2 ]."),
    (f"Backups run nightly [{HUGE}].", [(None,)], "Backups run nightly."),
    (f"Backups run nightly [{HUNDREDS}].", [(None,)], "Backups run nightly."),
    (f"Backups run nightly [1, {HUGE}].", [(1, None)], "Backups run nightly [1]."),
    (f"Backups run nightly 【{HUGE}】 and ^{HUNDREDS}.", [(None,), (None,)], "Backups run nightly and."),
    ("Backups run nightly [0].", [(0,)], "Backups run nightly."),
    # Not citations: left exactly as written.
    ('The tool answered {"created_row_ids":[3]}, then [1].', [(1,)],
     'The tool answered {"created_row_ids":[3]}, then [1].'),
    ('The tool answered {"created_row_ids":[7]}.', [], 'The tool answered {"created_row_ids":[7]}.'),
    ('It returned {"rows": [{"id": [9]}]} at once [8].', [(8,)], 'It returned {"rows": [{"id": [9]}]} at once.'),
    ("Call `delete_rows([7])` and `x[9]`.", [], "Call `delete_rows([7])` and `x[9]`."),
    ("Use ``a `[7]` b`` now.", [], "Use ``a `[7]` b`` now."),
    ("```json\n{\"ids\": [7]}\n[8]\n```\nDone [1].", [(1,)], "```json\n{\"ids\": [7]}\n[8]\n```\nDone [1]."),
    ("~~~\n[7]\n~~~", [], "~~~\n[7]\n~~~"),
    ("Unclosed fence:\n```\n[7] stays", [], "Unclosed fence:\n```\n[7] stays"),
    ("Text.\n\n    indented code [7]\n", [], "Text.\n\n    indented code [7]\n"),
    ("> The docs say [7].\n\nSo it runs [1].", [(1,)], "> The docs say [7].\n\nSo it runs [1]."),
    ('He wrote "run it [7] now" yesterday [1].', [(1,)], 'He wrote "run it [7] now" yesterday [1].'),
    ("She said “keep [9]” [2].", [(2,)], "She said “keep [9]” [2]."),
    ("See [the guide](https://example.com/a[7]) and [1](http://x.test/) too.", [],
     "See [the guide](https://example.com/a[7]) and [1](http://x.test/) too."),
    ("See [docs][1] for more.", [(1,)], "See [docs][1] for more."),
    ("Open https://example.com/page[7] now.", [], "Open https://example.com/page[7] now."),
    ("Open <https://example.com/x[7]> now.", [], "Open <https://example.com/x[7]> now."),
    ("The linked [\\[1\\]](/knowledge/passages/4) stays.", [], "The linked [\\[1\\]](/knowledge/passages/4) stays."),
    ("Escaped \\[7\\] stays.", [], "Escaped \\[7\\] stays."),
    ("An index rows_2[3] or x1[7] is no citation.", [], "An index rows_2[3] or x1[7] is no citation."),
    ("2^31 - 1 and x^2 are no citations.", [], "2^31 - 1 and x^2 are no citations."),
    ("A checkbox [ ] and [x] and [text] stay.", [], "A checkbox [ ] and [x] and [text] stay."),
    ("| id | rows |\n|---|---|\n| 4 | [7] |", [(7,)], "| id | rows |\n|---|---|\n| 4 | |"),
    ("Nothing cited at all.", [], "Nothing cited at all."),
    ("", [], ""),
]


def test_every_form_of_the_table_is_found_and_cleaned_as_expected():
    failures = []
    for answer, numbers, expected in FORMS:
        found = [c.numbers for c in find_citations(answer)]
        cleaned = rewrite_citations(answer, lambda _c, n: n in {1, 2, 3})
        if found != numbers or cleaned != expected:
            failures.append(f"{answer!r}: found {found}, expected {numbers}; gave {cleaned!r}, expected {expected!r}")
    assert not failures, "\n".join(failures)


def test_a_cleaned_answer_has_no_dangling_bracket_comma_or_double_space():
    for answer, _numbers, _expected in FORMS:
        if "`" in answer or "    " in answer or "|" in answer:
            continue  # code and tables keep their own spacing
        cleaned = rewrite_citations(answer, lambda _c, _n: False)
        assert "  " not in cleaned and " ." not in cleaned and " ," not in cleaned and "()" not in cleaned, (
            answer, cleaned)
        assert "[]" not in cleaned and "【】" not in cleaned and ",]" not in cleaned


def test_valid_citations_become_links_to_their_passages_and_a_group_keeps_its_valid_members():
    turn = TurnSources({1: Source(1, 41, 4, "Backups", ""), 2: Source(2, 42, 4, "Backups", "Restore")})

    def url(passage_id: int) -> str:
        return f"/knowledge/passages/{passage_id}"

    text = "Nightly [1, 7], restored on demand 【2】 [^1].\n\n[^1]: Backups guide"
    assert linked(strip_invalid(text, turn), turn, url) == (
        "Nightly [\\[1\\]](/knowledge/passages/41), restored on demand [\\[2\\]](/knowledge/passages/42) "
        "[\\[1\\]](/knowledge/passages/41).\n\n[\\[1\\]](/knowledge/passages/41): Backups guide")
    once = linked(strip_invalid(text, turn), turn, url)
    assert linked(once, turn, url) == once  # a linked answer is not linked twice
    assert cited(once) == []  # its links are links, no longer bare citations


def test_the_helpers_the_knowledge_skill_uses_keep_their_meaning():
    turn = TurnSources({2: Source(2, 42, 4, "Backups", "")})
    text = "A [2]. B [5]. C 【2】 again [2, 5]."
    assert cited(text) == [2, 5]
    assert valid_citations(text, turn) == [2]
    assert strip_invalid(text, turn) == "A [2]. B. C 【2】 again [2]."
    assert strip_invalid("  Done [9].  ", turn) == "Done."
    answer = no_evidence_answer(TurnSources(searches=["gym"], bases=["Handbook"]))
    assert answer.startswith("The documents do not answer this.") and "“gym”" in answer and "Handbook" in answer


def test_a_number_far_too_long_is_an_invalid_citation_and_costs_nothing():
    turn = TurnSources({1: Source(1, 41, 4, "Backups", "")})
    assert MAX_DIGITS < 30
    # 5,000 digits: int() would raise (Python's 4,300-digit limit) if the parser converted them.
    answer = f"Backups [{HUGE}] run [{'9' * 5000}] nightly [1]. " * 200
    cleaned = strip_invalid(answer, turn)
    assert cleaned.count("[1]") == 200 and "000" not in cleaned and "999" not in cleaned
    assert cited(answer) == [1]


@pytest.mark.parametrize("size", [100_000])
def test_a_huge_answer_is_parsed_whole(size):
    paragraph = "Backups run nightly [1] and `code [7]` and {\"id\": [7]} and [7].\n\n"
    answer = (paragraph * (size // len(paragraph) + 1))[:size]
    cleaned = rewrite_citations(answer, lambda _c, n: n == 1)
    assert cleaned.count("`code [7]`") == answer.count("`code [7]`")
    assert " and [7]" not in cleaned and "[1]" in cleaned


def test_binary_and_control_characters_are_text_like_any_other():
    answer = "Nightly \x00\x01 [1] \ufffd [7]\x7f."
    assert rewrite_citations(answer, lambda _c, n: n == 1) == "Nightly \x00\x01 [1] \ufffd \x7f."
