"""The evidence floor: "the documents do not answer this" decided from raw signals, never from fused scores."""

from __future__ import annotations

from app.extensions import db
from app.knowledge.evidence import MIN_SIMILARITY, Floor, units
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import put_document
from app.knowledge.search import retrieve

HANDBOOK = {
    "backups.md": "# Backups\n\nBackups run every night at 02:00 and are kept for 30 days on the second disk.",
    "holidays.md": "# Holidays\n\nThe office is closed on public holidays and on the 24th of December.",
    "settings.md": "# Settings\n\n| `OUTBOUND_ALLOWED_HOSTS` | empty | Private hosts that tools may reach. |",
}


def handbook(knowledge_base):
    kb = knowledge_base()
    for name, body in HANDBOOK.items():
        put_document(kb, f"upload:{name}", name, body.encode())
    db.session.commit()
    index_knowledge_base.delay(kb.id)
    return kb


def test_an_answered_question_has_evidence_and_an_off_topic_one_has_none(knowledge_base):
    kb = handbook(knowledge_base)
    answered = retrieve([kb], "When do the backups run?")
    assert answered.evidence.answerable and answered.evidence.similarity >= MIN_SIMILARITY
    off_topic = retrieve([kb], "How long should I knead sourdough bread?")
    # The search still ranks passages (every search has a first one, and its fused score is high)...
    assert off_topic.kept and off_topic.kept[0].fused >= 0.5
    # ...but none is evidence: the verdict reads the raw similarity and the words no passage holds.
    assert not off_topic.evidence.answerable
    assert set(off_topic.evidence.unknown) >= {"knead", "sourdough"}
    assert "best similarity" in off_topic.evidence.reason


def test_a_name_a_passage_holds_is_evidence_and_a_name_none_holds_is_not(knowledge_base):
    kb = handbook(knowledge_base)
    strict = Floor(min_similarity=0.99, min_similarity_unknown_words=0.99)  # no match by meaning is enough
    named = retrieve([kb], "SKILLDESK_OUTBOUND_ALLOWED_HOSTS", floor=strict).evidence
    assert named.answerable and named.names == ("SKILLDESK_OUTBOUND_ALLOWED_HOSTS",)
    assert named.similarity < strict.min_similarity
    unnamed = retrieve([kb], "What does SKILLDESK_TELEPORT_MODE do?").evidence
    assert not unnamed.answerable and unnamed.reason == "no passage names SKILLDESK_TELEPORT_MODE"


def test_a_word_no_passage_holds_asks_for_a_closer_match(knowledge_base):
    kb = handbook(knowledge_base)
    floor = Floor(min_similarity=0.0, min_similarity_unknown_words=0.99)
    known = retrieve([kb], "backups night disk", floor=floor).evidence
    assert known.answerable and known.unknown == ()
    unknown = retrieve([kb], "backups night teleportation", floor=floor).evidence
    assert not unknown.answerable and unknown.unknown == ("teleportation",)
    assert "no passage holds teleportation" in unknown.reason


def test_a_query_of_frame_words_only_or_no_words_has_no_unknown_word(knowledge_base):
    kb = handbook(knowledge_base)
    assert units("how do I do it?") == []
    for query in ("how do I do it?", "???", "12345"):
        evidence = retrieve([kb], query).evidence
        assert evidence.unknown == () and evidence.similarity is not None
    assert retrieve([kb], "   ").evidence.reason == "nothing was searched"


def test_no_knowledge_base_or_an_empty_one_is_no_evidence(knowledge_base):
    assert not retrieve([], "backups").evidence.answerable
    empty = retrieve([knowledge_base("Empty")], "When do the backups run?")
    assert empty.kept == [] and not empty.evidence.answerable
    assert empty.evidence.reason.startswith("no passage names") or "nothing found by meaning" in empty.evidence.reason


def test_hyphenated_prose_is_words_not_a_name_that_decides(knowledge_base):
    kb = handbook(knowledge_base)
    strict = Floor(min_similarity=0.99, min_similarity_unknown_words=0.99)
    prose = retrieve([kb], "second-disk backups", floor=strict).evidence  # both words are in the backups page
    assert prose.names == () and not prose.answerable and prose.unknown == ()
    absent = retrieve([kb], "two-factor backups", floor=Floor(0.0, 0.99)).evidence
    assert absent.unknown == ("two-factor",) and "no passage names" not in absent.reason
