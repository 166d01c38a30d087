"""The knowledge-base form refuses a name another base has, beside the field, with the one uniqueness check."""

from __future__ import annotations

import re

import pytest

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


def error_beside(html: str, name: str) -> str | None:
    found = re.search(rf'<label for="kb-{name}">.*?<p class="error" id="kb-{name}-error">([^<]*)', html, re.S)
    return found.group(1) if found else None


@pytest.mark.parametrize(("change", "field", "error"), [
    ({"name": ""}, "name", "Give the knowledge base a name of at most 80 characters."),
    ({"description": "d" * 301}, "description", "Keep the description under 300 characters."),
    ({"chunk_size": "199"}, "chunk_size", "Enter a whole number from 200 to 4000."),
    ({"chunk_size": "big"}, "chunk_size", "Enter a whole number from 200 to 4000."),
    ({"chunk_overlap": "1001"}, "chunk_overlap", "Enter a whole number from 0 to 1000."),
    ({"chunk_size": "400", "chunk_overlap": "200"}, "chunk_overlap", "Keep the overlap under half the passage size."),
])
def test_bad_settings_are_a_422_beside_the_field(app, client, auth, change, field, error):
    auth.login_as("admin")
    response = client.post("/admin/knowledge/", data={"name": "Manuals", "roles": ["user"], **change})
    assert response.status_code == 422
    assert error_beside(response.text, field) == error, response.text
    with app.app_context():
        assert db.session.scalar(db.select(KnowledgeBase.id).where(KnowledgeBase.name == "Manuals")) is None


def test_empty_sizes_are_the_defaults_and_unknown_roles_are_ignored(app, client, auth):
    auth.login_as("admin")
    data = {"name": " Field   manuals ", "chunk_size": "", "chunk_overlap": " ", "roles": ["user", "owner"],
            "folder": "  "}
    assert client.post("/admin/knowledge/", data=data).status_code == 302
    with app.app_context():
        kb = db.session.scalar(db.select(KnowledgeBase).where(KnowledgeBase.name == "Field manuals"))
        assert (kb.chunk_size, kb.chunk_overlap, kb.roles, kb.folder) == (1000, 150, ["user"], None)
