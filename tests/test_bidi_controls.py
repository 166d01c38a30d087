"""Bidirectional controls (U+202A–U+202E, U+2066–U+2069) are refused in single-line names, 422 beside the
field or a JSON 422, and kept in message text (app/policy/bidi.py says why).

A chat title "Invoice \u202efdp.exe" showed in the sidebar as "Invoice exe.pdf": every single-line name
took them, where control characters were already refused.
"""

from __future__ import annotations

import io
import json

import pytest

from app.extensions import db
from app.models import Conversation, DataTable, KnowledgeBase, Message, Run
from app.runtime import execution
from app.runtime.titles import fallback_title
from tests.chat_driver import start_chat
from tests.conftest import make_agent
from tests.test_chat import make_conversations

HX = {"HX-Request": "true"}
CONTROLS = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]


@pytest.mark.parametrize("control", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
def test_a_chat_title_with_a_bidi_control_is_a_422_beside_the_field(app, client, auth, control):
    user_id = auth.login_as("user")
    (conversation_id,) = make_conversations(app, user_id, 1, title="Kept")
    response = client.post(f"/chat/{conversation_id}/rename", data={"title": f"Invoice {control}fdp.exe"},
                           headers=HX)
    assert response.status_code == 422 and response.headers["HX-Retarget"] == "#rename-form"
    assert f"bidirectional control character (U+{ord(control):04X})" in response.text
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).title == "Kept"


def test_the_api_refuses_one_in_a_new_conversation_title(app, client, auth):
    auth.login_as("user")
    with app.app_context():
        agent_id = make_agent().id
    response = client.post("/api/conversations", data=json.dumps({"agentId": agent_id, "title": "a\u2067b"}),
                           content_type="application/json")
    assert response.status_code == 422 and "bidirectional control" in response.json["fields"]["title"]
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Conversation.id))) == 0


def test_admin_names_refuse_them_beside_the_field(app, client, auth):
    auth.login_as("admin")
    table = client.post("/admin/tables/", data={"name": "tickets", "label": "Tick\u202eets"})
    assert table.status_code == 422 and 'id="label-error"' in table.text and "bidirectional" in table.text
    base = client.post("/admin/knowledge/", data={"name": "Hand\u2066book", "roles": ["user"]})  # the `words` filter
    assert base.status_code == 422 and "bidirectional" in base.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(DataTable.id))) == 0
        assert db.session.scalar(db.select(KnowledgeBase.id).where(KnowledgeBase.name.contains("book"))) is None


def test_a_file_name_with_one_is_refused(app, client, auth):
    auth.login_as("admin")
    assert client.post("/admin/knowledge/", data={"name": "Handbook", "roles": ["user"]}).status_code == 302
    with app.app_context():
        kb_id = db.session.scalar(db.select(KnowledgeBase.id).where(KnowledgeBase.name == "Handbook"))
    response = client.post(f"/admin/knowledge/{kb_id}/upload", content_type="multipart/form-data",
                           data={"files": (io.BytesIO(b"# T\n\nx"), "report\u202edm.exe")})
    assert response.status_code == 422 and "bidirectional control" in response.text


def test_message_text_keeps_them_and_the_fallback_title_drops_them(app, client, auth):
    auth.login_as("user")
    conversation_id = start_chat(app, client)
    text = "\u202bשלום world\u202c and more"
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": text}, headers=HX)
    assert response.status_code == 200
    with app.app_context():
        assert db.session.scalar(db.select(Message.content).where(Message.role == "user")) == text
        execution.wait(db.session.scalar(db.select(Run.id)))
    assert fallback_title(text) == "שלום world and more"
