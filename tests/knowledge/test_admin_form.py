"""The knowledge-base form refuses a name another base has, beside the field, with the one uniqueness check."""

from __future__ import annotations

from app.extensions import db
from app.models import KnowledgeBase


def test_a_second_base_of_the_same_name_is_a_422_beside_the_name(app, client, auth):
    auth.login_as("admin")
    assert client.post("/admin/knowledge/", data={"name": "Handbook", "roles": ["member"]}).status_code == 302
    response = client.post("/admin/knowledge/", data={"name": "  Handbook ", "roles": ["member"]})
    assert response.status_code == 422
    assert "Another knowledge base already has this name." in response.text
    with app.app_context():
        assert len(db.session.scalars(db.select(KnowledgeBase.id).where(KnowledgeBase.name == "Handbook")).all()) == 1
        kb_id = db.session.scalar(db.select(KnowledgeBase.id).where(KnowledgeBase.name == "Handbook"))
    # saving the base under its own name is no clash
    assert client.post(f"/admin/knowledge/{kb_id}/settings", data={"name": "Handbook"}).status_code == 302
