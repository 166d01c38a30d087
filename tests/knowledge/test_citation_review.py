"""The citation review of a knowledge answer (real MiniLM): what the user is shown, what the model is asked
again, and when the honest no-evidence answer replaces the answer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.knowledge.citation_review import (
    MAX_CHECKED,
    Outcome,
    UncitedPolicy,
    assess_citations,
    review_citations,
)
from app.knowledge.citations import Source, TurnSources
from app.knowledge.sentences import split_sentences
from app.knowledge.statements import is_claim
from app.knowledge.support import Band, SupportCheck, Thresholds, Verdict

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from _support_pairs import passages  # noqa: E402

BACKUPS = ("Backups\n\nBackups run every night at 02:00 and are kept for 30 days.\n\n## Restore\n\n"
           "Restore from the Backups page.")
PASSAGES = passages()


def turn_of(*texts: str) -> TurnSources:
    turn = TurnSources(searches=["when do backups run"], bases=["Handbook"])
    for number, text in enumerate(texts, start=1):
        turn.sources[number] = Source(number, 40 + number, 4, f"Document {number}", "", text)
    return turn


def link(number: int) -> str:
    return f"/knowledge/passages/{40 + number}"


def review(check, text, turn, **options):
    return review_citations(assess_citations(text, turn, check, frozenset({"skilldesk"})), link=link, **options)


def test_an_invented_sentence_beside_a_valid_citation_is_marked_and_the_valid_one_linked(support_check):
    result = review(support_check, "Backups run every night at 02:00 [1]. It also deletes your tables every night.",
                    turn_of(BACKUPS))
    assert result.outcome is Outcome.KEEP
    assert result.text == ("Backups run every night at 02:00 [\\[1\\]](/knowledge/passages/41). "
                           "It also deletes your tables every night (unverified).")
    assert [result.text[a:b] for a, b in result.marked] == ["(unverified)"]
    assert result.uncited == ["It also deletes your tables every night."] and result.citations == [1]


def test_the_same_invented_sentence_citing_the_valid_passage_loses_its_citation(support_check):
    result = review(support_check, "Backups run every night at 02:00 [1]. It also deletes your tables every night [1].",
                    turn_of(BACKUPS))
    assert result.outcome is Outcome.KEEP
    assert result.text.endswith("It also deletes your tables every night (unverified).")
    assert [r.sentence for r in result.removed] == ["It also deletes your tables every night."]


def test_teleportation_citing_an_unrelated_passage_is_asked_again_then_answered_honestly(support_check):
    turn = turn_of(PASSAGES["architecture-models"], BACKUPS)
    first = review(support_check, "Skilldesk supports teleportation [1].", turn)
    assert first.outcome is Outcome.ASK_AGAIN
    assert "“Skilldesk supports teleportation.”" in first.feedback and "[1], [2]" in first.feedback
    second = review(support_check, "Skilldesk supports teleportation [1].", turn, may_ask_again=False)
    assert second.outcome is Outcome.NO_EVIDENCE
    assert second.text.startswith("The documents do not answer this.") and "teleportation" not in second.text


def test_a_correct_sentence_citing_the_wrong_one_of_two_passages_loses_that_citation(support_check):
    turn = turn_of(PASSAGES["memory-personal"], PASSAGES["memory-deleting"])
    result = review(support_check, "Deleting a chat does not delete the memories stored during it [1]. "
                    "Deleting a memory on the page removes its vector at once [2].", turn)
    assert result.outcome is Outcome.KEEP
    assert result.text.startswith("Deleting a chat does not delete the memories stored during it (unverified).")
    assert result.citations == [2] and result.removed[0].numbers == (1,)


def test_a_citation_the_sentence_does_not_need_is_dropped_and_a_needed_pair_kept(support_check):
    turn = turn_of(BACKUPS, PASSAGES["clock"], PASSAGES["knowledge-indexing"])
    result = review(support_check, "Backups run every night at 02:00 [1][2]. "
                    "Backups run every night, and indexing embeds passages 32 at a time [1][3].", turn)
    assert result.text.startswith("Backups run every night at 02:00 [\\[1\\]](/knowledge/passages/41).")
    assert result.text.endswith("[\\[1\\]](/knowledge/passages/41)[\\[3\\]](/knowledge/passages/43).")
    assert result.citations == [1, 3]


def test_a_quoted_tool_result_code_and_quotations_come_out_unchanged(support_check):
    answer = ('Backups run every night at 02:00 [1]. The tool answered `{"created_row_ids":[3]}` and '
              '{"created_row_ids":[3]} [1].\n\n> The guide says [2].\n\n```json\n{"ids": [2]}\n```')
    result = review(support_check, answer, turn_of(BACKUPS, PASSAGES["clock"]))
    assert '`{"created_row_ids":[3]}`' in result.text and ' {"created_row_ids":[3]}' in result.text
    assert "> The guide says [2]." in result.text and '```json\n{"ids": [2]}\n```' in result.text


def test_what_claims_nothing_is_never_marked(support_check):
    answer = ("Hi! Here is what I found: Backups run every night at 02:00 [1]. Do you want the restore steps? "
              "The documents do not say whether backups are encrypted. You asked whether they are encrypted. "
              "I hope this helps!")
    result = review(support_check, answer, turn_of(BACKUPS))
    assert result.outcome is Outcome.KEEP and result.marked == [] and result.uncited == []


def test_a_sentence_about_the_sources_that_goes_on_to_claim_something_is_marked(support_check):
    answer = ("Backups run every night at 02:00 [1]. The documents do not mention it, but backups are "
              "encrypted with AES.")
    result = review(support_check, answer, turn_of(BACKUPS))
    assert result.text.endswith("but backups are encrypted with AES (unverified).")


@pytest.mark.parametrize("sentence", [
    "Skilldesk deletes your tables every night, which the documents do not dispute.",
    "To answer your question, Skilldesk deletes your tables every night.",
    "You asked about backups; Skilldesk deletes your tables every night.",
    "Skilldesk deletes your tables every night, as you asked.",
])
def test_a_claim_that_mentions_the_sources_or_the_question_in_passing_is_still_a_claim(support_check, sentence):
    result = review(support_check, f"Backups run every night at 02:00 [1]. {sentence}", turn_of(BACKUPS))
    assert result.uncited == [sentence] and result.text.endswith("(unverified).")


def test_a_footnote_definition_names_the_retrieved_passage_not_what_the_model_wrote_there(support_check):
    answer = ("Backups run every night at 02:00 [1].\n\n[1]: Skilldesk deletes your tables every night.\n"
              "[7]: An invented source")
    result = review(support_check, answer, turn_of(BACKUPS))
    assert result.text == ("Backups run every night at 02:00 [\\[1\\]](/knowledge/passages/41).\n\n"
                           "[\\[1\\]](/knowledge/passages/41): Document 1")
    assert "deletes your tables" not in result.text and "invented" not in result.text


def test_every_sentence_cites_reconsiders_once_then_drops_the_uncited_ones_and_their_list_items(support_check):
    answer = ("Backups:\n\n- Run every night at 02:00 [1].\n- Delete your tables every night.\n\n"
              "They are kept for 30 days [1]. They are also mirrored to the moon.")
    turn = turn_of(BACKUPS)
    first = review(support_check, answer, turn, policy=UncitedPolicy.EVERY_SENTENCE_CITES)
    assert first.outcome is Outcome.ASK_AGAIN and "“Delete your tables every night.”" in first.feedback
    assert "“They are also mirrored to the moon.”" in first.feedback
    final = review(support_check, answer, turn, policy=UncitedPolicy.EVERY_SENTENCE_CITES, may_ask_again=False)
    assert final.outcome is Outcome.KEEP
    assert final.text == ("Backups:\n\n- Run every night at 02:00 [\\[1\\]](/knowledge/passages/41).\n\n"
                          "They are kept for 30 days [\\[1\\]](/knowledge/passages/41).")
    assert final.dropped == ["Delete your tables every night.", "They are also mirrored to the moon."]


def test_nothing_supported_is_asked_again_once_then_the_no_evidence_answer(support_check):
    turn = turn_of(BACKUPS)
    answer = "Yes, there is a gym on the third floor [1]. It opens at 07:00."
    assert review(support_check, answer, turn).outcome is Outcome.ASK_AGAIN
    final = review(support_check, answer, turn, may_ask_again=False)
    assert final.outcome is Outcome.NO_EVIDENCE and "Handbook" in final.text and "gym" not in final.text
    honest = review(support_check, "The documents do not say whether there is a gym.", turn)
    assert honest.outcome is Outcome.KEEP and honest.text == "The documents do not say whether there is a gym."


def test_a_turn_that_searched_nothing_only_loses_citations_it_cannot_have(support_check):
    result = review(support_check, "As I said, at 02:00 [1]. Backups are great.", TurnSources())
    assert result.outcome is Outcome.KEEP and result.text == "As I said, at 02:00. Backups are great."
    assert result.marked == []


def test_a_search_that_found_nothing_gives_the_no_evidence_answer_at_once(support_check):
    turn = TurnSources(searches=["gym"], bases=["Handbook"])
    result = review(support_check, "There is a gym on the third floor [1].", turn)
    assert result.outcome is Outcome.NO_EVIDENCE


def test_a_verifier_decides_the_undecided_and_without_one_the_cut_does(minilm):
    everything_undecided = Thresholds(0.6, 0.0, Band(9.0, 1.15, -9.0), Band(9.0, 0.3, -9.0))
    check = SupportCheck(minilm, everything_undecided)
    turn = turn_of(BACKUPS)
    assessment = assess_citations("Backups run every night at 02:00 [1]. Backups are sent to the moon [1].", turn,
                                  check)
    assert [s.index for s in assessment.undecided] == [0, 1]
    by_default = review_citations(assessment)
    assert by_default.citations == [1] and by_default.undecided == 2 and by_default.undecided_by == "default"
    assert by_default.text == "Backups run every night at 02:00 [1]. Backups are sent to the moon (unverified)."
    verified = review_citations(assessment, decisions={0: False, 1: True})
    assert verified.text == "Backups run every night at 02:00 (unverified). Backups are sent to the moon [1]."
    assert verified.undecided_by == "verifier"
    fixed = review_citations(assessment, decisions={0: True}, undecided_default=Verdict.UNSUPPORTED)
    assert fixed.undecided_by == "default+verifier" and fixed.citations == [1]


@pytest.mark.parametrize(("answer", "mark"), [
    ("Cancellare una chat non cancella le memorie salvate durante la chat [1]. "
     "Le memorie vengono cancellate dopo 90 giorni [1].", "(non verificato)"),
    ("Supprimer un chat ne supprime pas les mémoires enregistrées pendant ce chat [1]. "
     "Les mémoires sont effacées après 90 jours [1].", "(non vérifié)"),
    ("Borrar un chat no borra las memorias guardadas durante ese chat [1]. "
     "Las memorias se borran a los 90 días [1].", "(no verificado)"),
    ("Das Löschen eines Chats löscht die Erinnerungen nicht [1]. Erinnerungen werden nach 90 Tagen gelöscht [1].",
     "(nicht belegt)"),
])
def test_an_answer_in_another_language_is_checked_against_english_passages(support_check, answer, mark):
    result = review(support_check, answer, turn_of(PASSAGES["memory-deleting"]))
    assert result.outcome is Outcome.KEEP
    assert result.text.endswith(f" {mark}.") and result.text.count(mark) == 1  # the changed number
    assert result.citations == [1]  # the first sentence keeps its citation


def test_bad_input_gives_a_clear_result(support_check):
    turn = turn_of(BACKUPS, "")
    assert review(support_check, "", turn).outcome is Outcome.KEEP
    assert review(support_check, "", turn).text == ""
    empty_passage = review(support_check, "Backups run every night at 02:00 [2].", turn, may_ask_again=False)
    assert empty_passage.outcome is Outcome.NO_EVIDENCE
    huge_number = review(support_check, f"Backups run every night at 02:00 [1][{10 ** 30}].", turn)
    assert huge_number.text == "Backups run every night at 02:00 [\\[1\\]](/knowledge/passages/41)."


def test_an_answer_of_100000_characters_is_reviewed_with_a_bounded_check(minilm):
    counting = []

    class Counting:
        dimensions, settings = minilm.dimensions, minilm.settings

        def embed(self, texts):
            counting.extend(texts)
            return minilm.embed(texts)

    words = ("quickly", "safely", "fully", "again", "later", "often", "calmly", "daily")
    filler = [f"Backups run every night at 02:00 and restore {a} {b} {c} [1]."
              for a in words for b in words for c in words]
    answer = ("Backups run every night at 02:00 [1]. " + " ".join(filler * 4))[:100_000]
    result = review(SupportCheck(Counting()), answer, turn_of(BACKUPS))
    assert result.outcome is Outcome.KEEP and len(result.text) > 90_000
    assert len(split_sentences(answer)) > 2 * MAX_CHECKED
    assert len(set(counting)) <= MAX_CHECKED + 20  # the sentences checked, and the passage's windows
    assert result.undecided > 0  # past MAX_CHECKED a sentence is not measured, and not shown as supported


def test_the_metadata_names_the_kept_and_removed_citations(support_check):
    turn = turn_of(BACKUPS)
    result = review(support_check, "Backups run every night at 02:00 [1]. Backups are kept for 7 days [1].", turn)
    meta = result.meta(turn)
    assert meta["citations"] == [{"number": 1, "passage_id": 41, "title": "Document 1"}]
    assert meta["removed"] == [{"sentence": "Backups are kept for 7 days.", "numbers": [1],
                                "reason": "the cited passages do not have 7"}]
    assert meta["marked"] == 1 and meta["outcome"] == "keep"


def test_is_claim_reads_the_sentence_not_the_answer():
    claims = {s.text: is_claim(s) for s in split_sentences(
        "Sure! Backups run nightly. Why?\n\nHere are the steps:\n\nCiao! I documenti non dicono nulla sui backup. "
        "Die Dokumente sagen nichts über Backups. Yes.")}
    assert claims == {"Sure!": False, "Backups run nightly.": True, "Why?": False, "Here are the steps:": False,
                      "Ciao!": False, "I documenti non dicono nulla sui backup.": False,
                      "Die Dokumente sagen nichts über Backups.": False, "Yes.": False}


def test_a_greeting_is_a_whole_word_not_the_start_of_one():
    claims = {s.text: is_claim(s) for s in split_sentences(
        "High availability needs 3 nodes. Surely the backups run nightly. Hi, backups run nightly.")}
    assert claims == {"High availability needs 3 nodes.": True, "Surely the backups run nightly.": True,
                      "Hi, backups run nightly.": False}


def test_a_sentence_that_claims_nothing_keeps_its_citation_as_a_reference(support_check):
    result = review(support_check, "Here is what the documents say [1]. See [1] for the details.", turn_of(BACKUPS))
    assert result.outcome is Outcome.KEEP and result.citations == [1] and result.marked == []
    assert result.text.count("(/knowledge/passages/41)") == 2


def test_a_search_result_pasted_as_it_came_is_its_own_support(support_check):
    # What the offline model answers: the tool's result, its header line and the passage's own words.
    answer = ("Here is what the tools returned:\n- `search_knowledge` returned: [1] (passage 41) Backups\n"
              "Backups run every night at 02:00 and are kept for 30 days.\n\n## Restore\n\nRestore from the Back…")
    result = review(support_check, answer, turn_of(BACKUPS))
    assert result.outcome is Outcome.KEEP and result.marked == [] and result.citations == [1]
    assert "[\\[1\\]](/knowledge/passages/41) (passage 41)" in result.text


def test_what_the_assistant_did_is_left_to_the_review_of_actions_but_a_cited_claim_is_checked(support_check):
    turn = turn_of(BACKUPS)
    result = review(support_check, "Backups run every night at 02:00 [1]. I created the table Contacts. "
                    "Ho creato la tabella Contatti. I think they are encrypted.", turn)
    assert result.outcome is Outcome.KEEP and result.uncited == ["I think they are encrypted."]
    confirmed = review(support_check, "Backups run every night at 02:00 [1]. "
                       "I can confirm that Skilldesk supports teleportation [1].", turn)
    assert confirmed.text.endswith("Skilldesk supports teleportation (unverified).")
