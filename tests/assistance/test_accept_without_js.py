"""Accepting a proposal without JavaScript: the card's Accept is a plain form; Refuse needs JavaScript."""

from __future__ import annotations

import re

import pytest

from app.assistance.preferences import ui_setting
from app.extensions import db
from app.models import Conversation, Message, User
from tests.conftest import PASSWORD, make_agent, make_user
from tests.tables.factory import make_table

PROPOSAL_ID = "5f0c1c2e-8d2a-4a57-9a3e-2f4d6b1e0c11"
LAYOUT = {"namespace": "ui", "key": "defaultListLayout"}


def proposal(kind: str = "preference", target: dict | None = None, proposed="cards") -> dict:
    return {"id": PROPOSAL_ID, "schemaVersion": 1, "kind": kind, "target": target or LAYOUT, "current": "table",
            "proposed": proposed, "reason": "Cards fit a phone."}


def chat_with(app, user_id: int, *proposals: dict) -> int:
    """A conversation of the user whose answer carries the proposals."""
    with app.app_context():
        conversation = Conversation(user_id=user_id, agent_id=make_agent().id, title="Layout")
        db.session.add(conversation)
        db.session.flush()
        db.session.add_all([Message(conversation_id=conversation.id, role="user", content="Phone?"),
                            Message(conversation_id=conversation.id, role="assistant", content="I suggest cards.",
                                    meta={"status": "succeeded", "proposals": list(proposals)})])
        db.session.commit()
        return conversation.id


def preferences(app, user_id: int) -> dict:
    with app.app_context():
        return db.session.get(User, user_id).preferences


def accept(client, conversation_id: int, value: str = '"cards"', **fields):
    data = {"proposal": PROPOSAL_ID, "namespace": "ui", "key": "defaultListLayout", "value": value, **fields}
    return client.post(f"/chat/{conversation_id}/preferences", data=data)


def test_the_card_accepts_with_a_form_and_hides_refuse_without_javascript(app, client, auth):
    user_id = auth.login_as("user")
    page = client.get(f"/chat/{chat_with(app, user_id, proposal())}").text
    card = page[page.index(f'id="proposal-{PROPOSAL_ID}"'):]
    card = card[:card.index("</section>")]
    form = re.search(r'<form method="post" action="([^"]+)">(.*?)</form>', card, re.S)
    assert form and form.group(1).endswith("/preferences")
    assert 'name="csrf_token"' in form.group(2) and "name=\"value\" value='\"cards\"'" in form.group(2)
    assert 'type="submit" class="primary" data-proposal-accept' in form.group(2)
    assert 'class="js-only" data-proposal-refuse' in card and "Not accepting it changes nothing." in card


def test_accepting_writes_the_users_own_preference_and_goes_back_to_the_chat(app, client, auth):
    user_id = auth.login_as("user")
    conversation_id = chat_with(app, user_id, proposal())
    response = accept(client, conversation_id)
    assert response.status_code == 303
    assert response.location.endswith(f"/chat/{conversation_id}#proposal-{PROPOSAL_ID}")
    assert preferences(app, user_id) == {"ui": {"defaultListLayout": "cards"}}
    assert "Accepted: your preference ui.defaultListLayout is saved." in client.get(response.location).text
    with app.app_context():  # the server keeps no record of the decision
        message = db.session.scalar(db.select(Message).where(Message.conversation_id == conversation_id,
                                                             Message.role == "assistant"))
        assert message.meta["proposals"] == [proposal()]


@pytest.mark.parametrize(("value", "fields", "error"), [
    ('"grid"', {}, "ui.defaultListLayout: "),
    ("cards", {}, "The value must be JSON text"),
    ('{"a": 1, "a": 2}', {}, "The value must be JSON text"),
    ('"dark"', {"key": "fontSize"}, "ui has no setting fontSize"),
    ('"x" ', {"namespace": "Bad Name"}, "is not a valid namespace name"),
    ('"' + "x" * 1200 + '"', {"namespace": "mobile", "key": "note"}, "the limit is 1000"),
])
def test_an_invalid_value_is_422_with_the_error_on_the_card_and_nothing_written(app, client, auth, value,
                                                                                fields, error):
    user_id = auth.login_as("user")
    conversation_id = chat_with(app, user_id, proposal())
    response = accept(client, conversation_id, value, **fields)
    assert response.status_code == 422
    assert f'id="proposal-{PROPOSAL_ID}-error"' in response.text and error in response.text
    assert f'aria-describedby="proposal-{PROPOSAL_ID}-error"' in response.text
    assert preferences(app, user_id) == {}


def test_only_the_owner_of_the_chat_accepts_and_only_for_themselves(app, client, auth):
    owner_id = auth.login_as("user")
    conversation_id = chat_with(app, owner_id, proposal())
    auth.logout()
    other_id = auth.login_as("user")
    assert accept(client, conversation_id).status_code == 404
    assert accept(client, conversation_id, user_id=str(owner_id)).status_code == 404
    own = chat_with(app, other_id, proposal())
    assert accept(client, own, user_id=str(owner_id)).status_code == 303  # a user field is ignored
    assert preferences(app, owner_id) == {} and preferences(app, other_id) == {"ui": {"defaultListLayout": "cards"}}


def test_the_form_needs_its_csrf_token(csrf_app, app):
    with app.app_context():
        user = make_user(email="kim@example.org")
        user_id = user.id
    conversation_id = chat_with(app, user_id, proposal())
    client = csrf_app.test_client()
    login = client.get("/login").text
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', login).group(1)
    client.post("/login", data={"email": "kim@example.org", "password": PASSWORD, "csrf_token": token})
    page = client.get(f"/chat/{conversation_id}").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page[page.index("proposal-actions"):]).group(1)
    assert accept(client, conversation_id).status_code == 400
    assert accept(client, conversation_id, csrf_token="forged").status_code == 400
    assert preferences(app, user_id) == {}
    assert accept(client, conversation_id, csrf_token=token).status_code == 303
    assert preferences(app, user_id) == {"ui": {"defaultListLayout": "cards"}}


def test_a_layout_view_state_opens_its_list_with_the_view_for_that_page_load(app, client, auth):
    user_id = auth.login_as("user")
    with app.app_context():
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
    view = proposal("view_state", {"resource": "data/orders", "view": "layout"})
    other = {**proposal("view_state", {"resource": "data/orders", "view": "columns"}, ["a"]),
             "id": "00000000-0000-4000-8000-000000000000"}
    page = client.get(f"/chat/{chat_with(app, user_id, view, other)}").text
    form = re.search(r'<form method="get" action="(/data/orders)">\s*<input type="hidden" name="layout" '
                     r'value="cards">', page)
    assert form
    assert 'data-layout="cards"' in client.get("/data/orders?layout=cards").text
    with app.app_context():
        assert ui_setting(db.session.get(User, user_id), "defaultListLayout") == "table"  # this page load only
    card = page[page.index('id="proposal-00000000'):]
    assert 'class="primary js-only" data-proposal-accept' in card[:card.index("</section>")]  # no page applies it
