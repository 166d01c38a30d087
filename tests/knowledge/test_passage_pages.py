"""Passage and document pages open for the roles the knowledge base names, guests included, and 404
for the others: a guest reading a shared answer could not open its citations even when the base
named guests (the pages were for users and admins only)."""

from __future__ import annotations

import pytest

from app.extensions import db
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage


def passage_of(app, roles: list[str]) -> tuple[int, int]:
    with app.app_context():
        kb = KnowledgeBase(name=f"Base for {'-'.join(roles)}", roles=roles)
        db.session.add(kb)
        db.session.flush()
        document = KnowledgeDocument(knowledge_base_id=kb.id, title="Guide", source="upload:guide.md",
                                     content="Backups run nightly.", status="indexed", passage_count=1)
        db.session.add(document)
        db.session.flush()
        passage = KnowledgePassage(document_id=document.id, knowledge_base_id=kb.id, position=0, start=0, end=20,
                                   text="Backups run nightly.", embedded="Guide\nBackups run nightly.",
                                   chunker_version=2)
        db.session.add(passage)
        db.session.commit()
        return passage.id, document.id


@pytest.mark.parametrize(("roles", "status"), [(["guest", "user"], 200), (["user"], 404)])
def test_a_guest_reads_the_passages_of_a_base_that_names_guests(app, client, auth, roles, status):
    passage_id, document_id = passage_of(app, roles)
    auth.login_as("guest")
    assert client.get(f"/knowledge/passages/{passage_id}").status_code == status
    assert client.get(f"/knowledge/documents/{document_id}").status_code == status
