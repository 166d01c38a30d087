"""An answer's sentences and the citations that belong to each: the unit the support check judges."""

from __future__ import annotations

from app.knowledge.sentences import split_sentences


def texts(answer: str) -> list[tuple[str, list[int], str]]:
    return [(s.text, s.numbers, s.kind) for s in split_sentences(answer)]


def test_a_citation_belongs_to_the_sentence_it_ends_before_or_after_the_full_stop():
    assert texts("Backups run at 02:00 [1]. They are kept 30 days. [2][3] Restore works 【4】.") == [
        ("Backups run at 02:00.", [1], "paragraph"),
        ("They are kept 30 days.", [2, 3], "paragraph"),
        ("Restore works.", [4], "paragraph"),
    ]


def test_abbreviations_decimals_paths_and_code_do_not_end_a_sentence():
    answer = ("Use a floor, e.g. 0.25 as in docs/knowledge.md, i.e. the default [1]. "
              "Call `x.run(). Then` once [2]. Open https://example.com/a.b?c=d. now [3].")
    assert [t for t, _n, _k in texts(answer)] == [
        "Use a floor, e.g. 0.25 as in docs/knowledge.md, i.e. the default.",
        "Call x.run(). Then once.",
        "Open https://example.com/a.b?c=d. now.",
    ]


def test_list_items_headings_and_table_rows_are_sentences_of_their_own():
    answer = ("## Backups [1]\n\nThe settings:\n\n- Nightly at 02:00 [1].\n- Kept for **30 days** [2].\n\n"
              "| Setting | Default |\n|---|---|\n| Timezone | `UTC` [3] |\n")
    assert texts(answer) == [
        ("Backups", [1], "heading"),
        ("The settings:", [], "paragraph"),
        ("Nightly at 02:00.", [1], "paragraph"),
        ("Kept for 30 days.", [2], "paragraph"),
        ("Setting Default", [], "table_row"),
        ("Timezone UTC", [3], "table_row"),
    ]
    assert split_sentences(answer)[-1].cells == ("Timezone", "UTC")


def test_code_blockquotes_and_footnote_definitions_are_no_sentences():
    answer = ("Runs nightly[^1].\n\n> Quoted [2].\n\n```\nprint('x. Y') [3]\n```\n\n"
              "    indented [4]\n\n[^1]: Backups guide\n")
    assert texts(answer) == [("Runs nightly.", [1], "paragraph")]


def test_underscores_of_identifiers_stay_and_emphasis_goes():
    assert texts("Tables are dt_<name>, **real** and _plain_ with `http_*` and min_score [1].") == [
        ("Tables are dt_<name>, real and plain with http_* and min_score.", [1], "paragraph")]


def test_spans_point_into_the_answer():
    answer = "  Hello!  Backups run [1].\n"
    first, second = split_sentences(answer)
    assert answer[first.start:first.end] == "Hello!"
    assert answer[second.start:second.end] == "Backups run [1]."


def test_empty_and_markup_only_answers_have_no_sentences():
    assert split_sentences("") == [] and split_sentences("\n\n---\n\n") == []
    assert texts("```\nonly code\n```") == []
