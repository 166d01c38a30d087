"""The retrieval console (admins): hybrid, by meaning and by words side by side with each passage's scores, the
evidence verdict, and bad queries answered 422 beside the field, never a 500."""

from __future__ import annotations

import re

import pytest

from app.extensions import db
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import put_document
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage


@pytest.fixture
def kb_id(app, minilm) -> int:
    with app.app_context():
        kb = KnowledgeBase(name="Handbook", roles=["admin", "user"])
        db.session.add(kb)
        db.session.commit()
        from app.knowledge.library import vector_store

        vector_store().drop(kb.collection)
        for name, body in (("backups.md", "# Backups\n\nBackups run every night at 02:00; see BACKUP_WINDOW."),
                           ("holidays.md", "# Holidays\n\nThe office is closed on public holidays.")):
            put_document(kb, f"upload:{name}", name, body.encode())
        db.session.commit()
        index_knowledge_base.delay(kb.id)
        yield kb.id
        vector_store().drop(kb.collection)


def table(html: str, name: str) -> str:
    return re.search(rf'<table class="table compact" id="console-{name}">(.*?)</table>', html, re.S).group(1)


def test_the_console_shows_the_three_rankings_side_by_side_with_each_passages_scores(client, auth, kb_id):
    auth.login_as("admin")
    page = client.get(f"/admin/knowledge/{kb_id}?q=when+do+backups+run")
    assert page.status_code == 200
    for name in ("hybrid", "semantic", "lexical"):
        rows = table(page.text, name)
        assert "Backups" in rows and re.search(r"meaning 0\.\d{3} \(1\)", rows), name
    assert "Holidays" in table(page.text, "semantic") and "Holidays" not in table(page.text, "lexical")
    assert re.search(r"words [0-9.e+-]+ \(1\)\s*· fused 1\.000", table(page.text, "hybrid"))
    assert 'id="console-evidence" class="alert">' in page.text and "Evidence found" in page.text


def test_the_console_says_when_nothing_is_evidence(client, auth, kb_id):
    auth.login_as("admin")
    page = client.get(f"/admin/knowledge/{kb_id}", query_string={"q": "What does BACKUP_TELEPORT do?"})
    assert page.status_code == 200
    assert 'class="alert error"' in page.text and "no passage names BACKUP_TELEPORT" in page.text
    assert "Backups" in table(page.text, "hybrid")  # the passages are still shown, for the admin to judge


@pytest.mark.parametrize(("query", "error"), [
    ("backups " * 200, "Keep the query under 1,000 characters"),
    ("   ", "Say what to search for."),
])
def test_a_bad_query_is_a_422_beside_the_field(client, auth, kb_id, query, error):
    auth.login_as("admin")
    page = client.get(f"/admin/knowledge/{kb_id}", query_string={"q": query})
    assert page.status_code == 422
    assert re.search(r'<p class="error" id="kb-q-error">([^<]*)</p>', page.text).group(1).startswith(error)
    assert 'id="console-results"' not in page.text


def test_binary_and_odd_queries_and_limits_never_fail(client, auth, kb_id):
    auth.login_as("admin")
    assert client.get(f"/admin/knowledge/{kb_id}", query_string={"q": "backups\x00\x01"}).status_code == 422
    for query in ("???", "12345", "ÿØÿà JFIF \ufffd\ufffd", "日本語の質問"):
        assert client.get(f"/admin/knowledge/{kb_id}", query_string={"q": query}).status_code == 200, query
    for limit in ("-5", "0", "99999999999", "x"):
        page = client.get(f"/admin/knowledge/{kb_id}", query_string={"q": "backups", "limit": limit})
        assert page.status_code == 200 and "Backups" in table(page.text, "hybrid")


def test_a_passage_with_no_text_is_shown_as_such(app, client, auth, kb_id):
    with app.app_context():
        document = KnowledgeDocument(knowledge_base_id=kb_id, title="Blank", source="upload:blank.md",
                                     content=" ", status="indexed", passage_count=1)
        db.session.add(document)
        db.session.flush()
        db.session.add(KnowledgePassage(document_id=document.id, knowledge_base_id=kb_id, position=0, start=0, end=1,
                                        text=" ", embedded="Blank", chunker_version=3))
        db.session.commit()
    auth.login_as("admin")
    page = client.get(f"/admin/knowledge/{kb_id}", query_string={"q": "blank"})
    assert page.status_code == 200 and "(no text)" in table(page.text, "lexical")


def test_the_console_is_for_admins(client, auth, kb_id):
    auth.login_as("user")
    assert client.get(f"/admin/knowledge/{kb_id}?q=backups").status_code in (403, 404)
