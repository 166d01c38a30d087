"""Uploads hold text from outside in every part: a file's name and a document's title must fit the
columns and hold no NUL, or PostgreSQL refuses the insert (a 500). Run with SKILLDESK_TEST_DATABASE_URL."""

from __future__ import annotations

import io
import re

from app.extensions import db
from app.models import KnowledgeBase, KnowledgeDocument


def knowledge_base(app) -> int:
    with app.app_context():
        kb = KnowledgeBase(name="Uploads", roles=["user"])
        db.session.add(kb)
        db.session.commit()
        return kb.id


def upload(client, kb_id: int, name: str, data: bytes):
    return client.post(f"/admin/knowledge/{kb_id}/upload", data={"files": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


def test_a_file_name_too_long_to_keep_is_a_422_beside_the_field(app, client, auth):
    kb_id = knowledge_base(app)
    auth.login_as("admin")
    response = upload(client, kb_id, "n" * 600 + ".md", b"# Long\n\nText.")
    assert response.status_code == 422
    assert re.search(r'id="kb-files".*?<p class="error"[^>]*>[^<]*at most 300 characters', response.text, re.S)
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(KnowledgeDocument.id))) == 0


def test_a_nul_in_a_documents_heading_is_left_out_of_its_title(app, client, auth):
    kb_id = knowledge_base(app)
    auth.login_as("admin")
    for name, data in (("a.md", b"# Bad\x00title\n\nText."),
                       ("b.html", b"<html><head><title>Nul\x00here</title></head><body><p>Text.</p></body></html>")):
        assert upload(client, kb_id, name, data).status_code == 302, name
    with app.app_context():
        titles = sorted(db.session.scalars(db.select(KnowledgeDocument.title)))
    assert titles == ["Badtitle", "Nul\ufffdhere"]  # lxml itself reads an HTML NUL as U+FFFD
