"""The citation support check with the real MiniLM: what a cited passage supports, what it does not, the
adversarial cases (invented, off-topic, the wrong passage, a changed number or name, other languages), bad
input, and that the shipped thresholds keep their calibrated precision on the labelled set."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.guards.outbound import OutboundPolicy
from app.knowledge.embeddings import OpenAICompatibleEmbedder
from app.knowledge.support import MAX_SENTENCE_CHARS, NOTHING, THRESHOLDS, SupportCheck, Verdict, windows
from app.knowledge.support_terms import language_of, number, sentence_terms

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from _support_pairs import pairs, passages  # noqa: E402

BACKUPS = ("Backups\n\nBackups run every night at 02:00 and are kept for 30 days.\n\n## Restore\n\n"
           "Restore from the Backups page.")
PASSAGES = passages()


def verdicts(check: SupportCheck, items: list[tuple[str, list[str]]]) -> list[Verdict]:
    return [support.verdict for support in check.check_all(items)]


def test_a_restated_or_paraphrased_sentence_is_supported_by_its_passage(support_check):
    assert verdicts(support_check, [
        ("Backups run every night at 02:00.", [BACKUPS]),
        ("Backups are kept for 30 days.", [BACKUPS]),
        ("Backups are kept for thirty days.", [BACKUPS]),  # a number word is the number
        ("Deleting a chat does not delete the memories stored during it.", [PASSAGES["memory-deleting"]]),
    ]) == [Verdict.SUPPORTED] * 4


def test_an_invented_sentence_and_teleportation_are_unsupported_whatever_they_cite(support_check):
    assert verdicts(support_check, [
        ("It also deletes your tables every night.", [BACKUPS]),
        ("Skilldesk supports teleportation.", [PASSAGES["architecture-models"]]),
        ("Skilldesk supports teleportation.", [BACKUPS, PASSAGES["clock"]]),
    ]) == [Verdict.UNSUPPORTED] * 3


def test_a_correct_sentence_citing_the_wrong_one_of_two_passages_is_unsupported(support_check):
    sentence = "Deleting a chat does not delete the memories stored during it."
    right, wrong = PASSAGES["memory-deleting"], PASSAGES["memory-personal"]
    assert verdicts(support_check, [(sentence, [wrong]), (sentence, [right]), (sentence, [wrong, right])]) == [
        Verdict.UNSUPPORTED, Verdict.SUPPORTED, Verdict.SUPPORTED]


def test_a_sentence_that_adds_a_number_a_name_or_an_identifier_is_unsupported_and_says_which(support_check):
    number_changed, name_changed, identifier_changed = support_check.check_all([
        ("Backups are kept for 7 days.", [BACKUPS]),
        ("Personal memories live in one Pinecone collection per person.", [PASSAGES["memory-personal"]]),
        ("Shared memories live in the collection memories-team-<id>.", [PASSAGES["memory-personal"]]),
    ])
    assert number_changed.verdict is Verdict.UNSUPPORTED and number_changed.measures.missing == ("7",)
    assert "7" in number_changed.reason
    assert name_changed.verdict is Verdict.UNSUPPORTED and name_changed.measures.missing == ("pinecone",)
    assert identifier_changed.verdict is Verdict.UNSUPPORTED
    assert identifier_changed.measures.missing == ("memories-team-<id",)


def test_known_names_are_never_what_a_passage_lacks(support_check):
    sentence = "In Skilldesk, backups run every night at 02:00."
    assert support_check.check(sentence, [BACKUPS]).measures.missing == ("skilldesk",)
    assert support_check.check(sentence, [BACKUPS], known=frozenset({"skilldesk"})).verdict is Verdict.SUPPORTED


@pytest.mark.parametrize(("sentence", "language"), [
    ("I backup vengono eseguiti ogni notte alle 02:00.", "it"),
    ("Les sauvegardes sont conservées 30 jours.", "fr"),
    ("Las copias de seguridad se ejecutan cada noche a las 02:00.", "es"),
    ("Backups laufen jede Nacht um 02:00 Uhr.", "de"),
])
def test_a_translation_of_the_passage_is_not_called_unsupported(support_check, sentence, language):
    support = support_check.check(sentence, [BACKUPS])
    assert support.measures.language == language
    # MiniLM is an English model: across languages it cannot always be sure (undecided), but by default it
    # leans the right way and never calls a faithful translation unsupported.
    assert support.verdict in (Verdict.SUPPORTED, Verdict.UNDECIDED) and support.leaning is Verdict.SUPPORTED


@pytest.mark.parametrize("sentence", [
    "I backup vengono conservati per 90 giorni.",
    "Les sauvegardes sont conservées 45 jours.",
    "Las copias se guardan durante 10 días.",
    "Sicherungen werden 60 Tage lang aufbewahrt.",
    "Il dado è tratto.",
    "Der Hund bellt laut im Garten.",
])
def test_in_another_language_a_changed_number_or_an_unrelated_sentence_is_unsupported(support_check, sentence):
    assert support_check.check(sentence, [BACKUPS]).verdict is Verdict.UNSUPPORTED


def test_empty_input_and_passages_with_no_text_give_a_verdict_never_an_exception(support_check):
    results = support_check.check_all([
        ("", [BACKUPS]), ("   ", [BACKUPS]), ("Backups run nightly.", []), ("Backups run nightly.", ["", "  \n"]),
    ])
    assert [r.verdict for r in results] == [Verdict.UNSUPPORTED] * 4
    assert all(r.measures is NOTHING for r in results)
    assert support_check.check_all([]) == []


def test_a_huge_sentence_or_passage_is_checked_on_its_bounded_start(support_check):
    huge = "Backups run every night at 02:00. " + "filler words " * 10_000
    assert support_check.check(huge, [BACKUPS]) == support_check.check(huge[:MAX_SENTENCE_CHARS], [BACKUPS])
    assert support_check.check("Backups run every night at 02:00.", [BACKUPS * 500]).verdict is Verdict.SUPPORTED


class CountingEmbedder:
    """The real MiniLM, counting the texts it is given."""

    def __init__(self, embedder) -> None:
        self.embedder, self.texts = embedder, []
        self.dimensions, self.settings = embedder.dimensions, embedder.settings

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return self.embedder.embed(texts)


def test_passage_windows_are_embedded_once_and_every_check_is_one_call(minilm):
    counting = CountingEmbedder(minilm)
    check = SupportCheck(counting)
    check.check_all([("Backups run nightly.", [BACKUPS]), ("Restore from the page.", [BACKUPS])])
    first = list(counting.texts)
    assert len(first) == len(set(first)) == 2 + len(windows(BACKUPS))
    check.check("Backups are kept for 30 days.", [BACKUPS])
    assert counting.texts[len(first):] == ["Backups are kept for 30 days."]


def test_any_embedder_of_the_protocol_serves(embeddings_server):
    local = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}))
    embedder = OpenAICompatibleEmbedder(f"{embeddings_server.url}/v1", "letters", policy=local)
    try:
        result = SupportCheck(embedder).check("Backups run every night at 02:00.", [BACKUPS])
    finally:
        embedder.close()
    assert result.measures is not NOTHING and 0 < result.measures.similarity <= 1


def test_terms_are_read_in_the_sentences_language():
    assert language_of("I backup vengono eseguiti ogni notte.") == "it"
    assert language_of("Les sauvegardes sont conservées.") == "fr"
    assert language_of("Las copias de seguridad se ejecutan cada noche.") == "es"
    assert language_of("Die Sicherungen laufen jede Nacht.") == "de"
    assert language_of("Backups run every night.") == "en"
    assert [number(n) for n in ("1,000", "4.000", "0,25", "02:00", "80%", "007")] == [
        "1000", "4000", "0.25", "2:00", "80", "7"]
    terms = sentence_terms("The MiniLM model runs `min_score` at 0.25 in Chroma, twelve times.")
    assert terms.names == {"minilm", "chroma"} and terms.identifiers == {"min_score"}
    assert terms.numbers == {"0.25", "12"}
    assert sentence_terms("Die Sicherung läuft nachts.").names == frozenset()  # German nouns are no names


def test_the_shipped_thresholds_keep_their_calibrated_precision_on_the_labelled_set(support_check):
    # Every third English pair of benchmarks/data/support_pairs.yaml (the whole set is calibrated by
    # benchmarks/support_calibration.py): at the calibration's prior, the default's "supported" is right at
    # least 95 times in 100, and it keeps at least 90% of the supported pairs.
    sample = [p for p in pairs() if p.language == "en"][::3]
    results = support_check.check_all([(p.sentence, [p.passage]) for p in sample])
    supported = [p for p in sample if p.supported]
    right = sum(1 for p, r in zip(sample, results, strict=True) if p.supported and r.leaning is Verdict.SUPPORTED)
    wrong = sum(1 for p, r in zip(sample, results, strict=True) if not p.supported and r.leaning is Verdict.SUPPORTED)
    prior = 0.75
    precision = right * prior / len(supported) / (
        right * prior / len(supported) + wrong * (1 - prior) / (len(sample) - len(supported)))
    assert precision >= 0.95, (precision, right, wrong)
    assert right / len(supported) >= 0.9
    assert THRESHOLDS.english.unsupported <= THRESHOLDS.english.cut <= THRESHOLDS.english.supported
