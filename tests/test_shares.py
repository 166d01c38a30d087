"""Sharing: audiences, expiry, revoke, snapshots, and continuing a shared chat as one's own copy."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from app.extensions import db
from app.models import Conversation, Message, Share
from app.models.base import utcnow
from tests.chat_driver import chat_model, send, start_chat, words
from tests.conftest import PASSWORD

HX = {"HX-Request": "true"}


def sign_in(app, email: str):
    client = app.test_client()
    assert client.post("/login", data={"email": email, "password": PASSWORD}).status_code == 302
    return client


@pytest.fixture
def people(app, auth):
    """Ann (the owner, signed in on `client`), and Ben, Cid (users) and Gus (guest) with their own clients."""
    for name in ("ben", "cid"):
        auth.create("user", email=f"{name}@example.org")
    auth.create("guest", email="gus@example.org")
    auth.login_as("user", email="ann@example.org")
    return {name: sign_in(app, f"{name}@example.org") for name in ("ben", "cid", "gus")}


@pytest.fixture
def seen() -> list:
    """What the chat model was given, request by request."""
    return []


@pytest.fixture
def chat(app, client, people, scripted_model, seen) -> int:
    """Ann's conversation with one question and its answer."""
    async def model(messages, info):
        seen.append(list(messages))
        yield f"Answer {len(seen)}."

    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model))
    send(app, client, conversation_id, "First question")
    return conversation_id


def share(app, client, conversation_id: int, **form) -> tuple[str, int]:
    """Create a link through the dialog; return its token and id."""
    response = client.post(f"/chat/{conversation_id}/shares", data=form, headers=HX)
    assert response.status_code == 200, response.text
    token = re.search(r'/s/([\w-]+)"', response.text).group(1)
    with app.app_context():
        return token, db.session.scalar(db.select(Share.id).where(Share.token == token))


def test_the_dialog_offers_instance_and_named_users_and_public_only_when_allowed(app, client, chat):
    dialog = client.get(f"/chat/{chat}/share", headers=HX)
    assert dialog.status_code == 200 and '<section id="share-dialog"' in dialog.text
    assert 'value="instance"' in dialog.text and 'value="users"' in dialog.text
    assert 'value="public"' not in dialog.text
    app.config["ALLOW_PUBLIC_LINKS"] = True
    assert 'value="public"' in client.get(f"/chat/{chat}/share", headers=HX).text


def test_an_instance_link_opens_read_only_for_signed_in_users(app, client, people, chat):
    token, _ = share(app, client, chat)
    assert len(token) >= 40  # unguessable
    page = people["ben"].get(f"/s/{token}")
    assert page.status_code == 200
    assert "First question" in page.text and "Answer 1." in page.text
    assert "A read-only snapshot shared by" in page.text
    assert 'id="composer"' not in page.text  # read-only
    assert "Continue as my own copy" in page.text
    guest = people["gus"].get(f"/s/{token}")
    assert guest.status_code == 200 and "Continue as my own copy" not in guest.text
    assert people["gus"].post(f"/s/{token}/copy").status_code == 403
    anonymous = app.test_client().get(f"/s/{token}")
    assert anonymous.status_code == 302 and anonymous.location.startswith("/login?next=")


def test_a_link_for_named_users_opens_for_them_only(app, client, people, chat):
    token, _ = share(app, client, chat, audience="users", emails="BEN@example.org; ")
    assert people["ben"].get(f"/s/{token}").status_code == 200
    assert people["cid"].get(f"/s/{token}").status_code == 404  # a third user
    assert people["cid"].post(f"/s/{token}/copy").status_code == 404
    assert client.get(f"/s/{token}").status_code == 200  # the owner


@pytest.mark.parametrize(("form", "field", "error"), [
    ({"audience": "users", "emails": ""}, "emails", "Name at least one person by e-mail."),
    ({"audience": "users", "emails": "ben@example.org, nobody@example.org"}, "emails",
     "No active account has the e-mail nobody@example.org."),
    ({"audience": "public"}, "audience", "Choose who may open the link."),
    ({"audience": "everyone"}, "audience", "Choose who may open the link."),
    ({"expires_days": "0"}, "expires_days", "Use a whole number of days from 1 to 365"),
    ({"expires_days": "366"}, "expires_days", "Use a whole number of days from 1 to 365"),
    ({"expires_days": "soon"}, "expires_days", "Use a whole number of days from 1 to 365"),
])
def test_bad_share_forms_are_a_422_with_the_error_beside_the_field(app, client, chat, form, field, error):
    response = client.post(f"/chat/{chat}/shares", data=form, headers=HX)
    assert response.status_code == 422
    assert '<section id="share-dialog"' in response.text and error in response.text
    assert 'class="field invalid"' in response.text or 'class="field invalid"' in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Share.id))) == 0


def test_public_links_only_where_an_admin_allowed_them(app, client, chat):
    app.config["ALLOW_PUBLIC_LINKS"] = True
    token, _ = share(app, client, chat, audience="public")
    anonymous = app.test_client()
    page = anonymous.get(f"/s/{token}")
    assert page.status_code == 200 and "First question" in page.text
    assert "Continue as my own copy" not in page.text
    assert anonymous.post(f"/s/{token}/copy").status_code in (302, 401)  # sign in first
    app.config["ALLOW_PUBLIC_LINKS"] = False  # the admin turns public links off again
    assert anonymous.get(f"/s/{token}").status_code == 404


def test_expired_and_revoked_links_answer_404(app, client, people, chat):
    expiring, expiring_id = share(app, client, chat, expires_days="2")
    revoked, revoked_id = share(app, client, chat)
    with app.app_context():
        expires_at = db.session.get(Share, expiring_id).expires_at
    assert timedelta(days=1, hours=23) < expires_at - utcnow() <= timedelta(days=2)
    assert people["ben"].get(f"/s/{expiring}").status_code == 200
    with app.app_context():
        db.session.get(Share, expiring_id).expires_at = utcnow() - timedelta(seconds=1)
        db.session.commit()
    assert people["ben"].get(f"/s/{expiring}").status_code == 404
    assert "expired" in client.get("/shares").text

    assert client.post(f"/shares/{revoked_id}/revoke").status_code == 302
    assert people["ben"].get(f"/s/{revoked}").status_code == 404
    assert people["ben"].post(f"/s/{revoked}/copy").status_code == 404
    assert client.get(f"/s/{revoked}").status_code == 404  # for the owner too
    assert f"/s/{revoked}" not in client.get("/shares").text


def test_the_shared_links_page_lists_only_my_links(app, client, people, chat):
    token, share_id = share(app, client, chat)
    assert f"/s/{token}" in client.get("/shares").text
    assert f"/s/{token}" not in people["ben"].get("/shares").text
    # Share management is the owner's: someone else gets 404 and changes nothing.
    assert people["ben"].post(f"/shares/{share_id}/revoke").status_code == 404
    assert people["ben"].post(f"/shares/{share_id}/snapshot").status_code == 404
    with app.app_context():
        assert db.session.get(Share, share_id).revoked_at is None


def test_the_link_shows_a_snapshot_until_it_is_updated(app, client, people, chat):
    token, share_id = share(app, client, chat)
    send(app, client, chat, "Second question")
    page = people["ben"].get(f"/s/{token}").text
    assert "First question" in page and "Second question" not in page
    assert client.post(f"/shares/{share_id}/snapshot").status_code == 302
    page = people["ben"].get(f"/s/{token}").text
    assert "Second question" in page and "Answer 2." in page


def test_continue_as_my_own_copy(app, client, people, chat, seen):
    token, _ = share(app, client, chat)
    client.post(f"/chat/{chat}/rename", data={"title": "Original"})
    ben = people["ben"]
    response = ben.post(f"/s/{token}/copy")
    assert response.status_code == 302
    copy_id = int(response.location.rsplit("/", 1)[-1])
    assert copy_id != chat
    page = ben.get(f"/chat/{copy_id}")
    assert page.status_code == 200 and "First question" in page.text and "Answer 1." in page.text
    assert "This is your own copy; the original is unchanged." in page.text
    with app.app_context():
        copy = db.session.get(Conversation, copy_id)
        assert copy.source == "copy" and copy.user.email == "ben@example.org"
    send(app, ben, copy_id, "Follow-up from Ben")
    last_turn = seen[-1]  # the copy continues with the shared history
    prompts = [p.content for m in last_turn if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, UserPromptPart)]
    answers = [p.content for m in last_turn if isinstance(m, ModelResponse) for p in m.parts
               if isinstance(p, TextPart)]
    assert prompts == ["First question", "Follow-up from Ben"] and answers == ["Answer 1."]
    with app.app_context():
        original = db.session.scalars(db.select(Message.content).where(Message.conversation_id == chat)).all()
    assert original == ["First question", "Answer 1."]
    assert client.get(f"/chat/{copy_id}").status_code == 404  # the copy is Ben's, not Ann's


def test_a_copy_needs_an_agent_the_visitor_may_use(app, client, people, chat):
    token, _ = share(app, client, chat)
    with app.app_context():
        conversation = db.session.get(Conversation, chat)
        conversation.agent.roles = ["admin"]
        db.session.commit()
    response = people["ben"].post(f"/s/{token}/copy", follow_redirects=True)
    assert "You cannot use the agent of this conversation" in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Conversation.id))) == 1


def test_deleting_the_conversation_kills_its_links(app, client, people, chat):
    token, share_id = share(app, client, chat)
    assert client.post(f"/chat/{chat}/delete").status_code == 302
    assert people["ben"].get(f"/s/{token}").status_code == 404
    assert client.get(f"/s/{token}").status_code == 404
    with app.app_context():
        assert db.session.get(Share, share_id) is None


def test_the_snapshot_holds_the_transcript_not_the_model_context(app, client, chat):
    _token, share_id = share(app, client, chat)
    with app.app_context():
        snapshot = db.session.get(Share, share_id).snapshot
    assert [(item["role"], item["content"]) for item in snapshot] == [("user", "First question"),
                                                                      ("assistant", "Answer 1.")]
    assert all(set(item) == {"role", "content", "steps", "meta", "created_at"} for item in snapshot)


def test_a_link_from_another_users_chat_cannot_be_made(app, client, people, scripted_model):
    conversation_id = start_chat(app, people["ben"], model_config_id=chat_model(scripted_model, words("x")))
    assert client.get(f"/chat/{conversation_id}/share", headers=HX).status_code == 404
    assert client.post(f"/chat/{conversation_id}/shares", data={}, headers=HX).status_code == 404
