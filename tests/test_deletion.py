"""Deletion purges at once: transcript, model context, run events, title; a deleted user's data goes too."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import text

from app.database import purge_steps
from app.extensions import db
from app.models import Conversation, Message, Run, RunEvent, Share, User
from app.runtime import execution
from tests.chat_driver import chat_model, outcome, send, start_chat, words
from tests.conftest import PASSWORD

HX = {"HX-Request": "true"}


def counts(conversation_id: int) -> dict[str, int]:
    runs = db.select(Run.id).where(Run.conversation_id == conversation_id)
    return {
        "messages": db.session.scalar(db.select(db.func.count(Message.id))
                                      .where(Message.conversation_id == conversation_id)),
        "events": db.session.scalar(db.select(db.func.count(RunEvent.id)).where(RunEvent.run_id.in_(runs))),
        "shares": db.session.scalar(db.select(db.func.count(Share.id))
                                    .where(Share.conversation_id == conversation_id)),
    }


def stored_text(conversation_id: int) -> list:
    """Every text column of the conversation's row and its runs, read straight from the database."""
    row = db.session.execute(text("SELECT title, model_context FROM conversations WHERE id = :id"),
                             {"id": conversation_id}).one()
    runs = db.session.execute(text("SELECT prompt, error FROM runs WHERE conversation_id = :id"),
                              {"id": conversation_id}).all()
    return [value for value in [*row, *(v for r in runs for v in r)] if value]


@pytest.fixture
def finished_chat(app, client, auth, scripted_model):
    """A signed-in user's titled conversation with two turns, a tool step and a share link."""
    auth.login_as("user")
    model = chat_model(scripted_model, words("Secret answer"))
    conversation_id = start_chat(app, client, model_config_id=model, skills=[{"name": "clock", "config": {}}])
    run_id = send(app, client, conversation_id, "Secret question")
    send(app, client, conversation_id, "Another secret")
    client.post(f"/chat/{conversation_id}/rename", data={"title": "Secret title"})
    response = client.post(f"/chat/{conversation_id}/shares", data={"audience": "instance"}, headers=HX)
    token = response.text.split("/s/")[1].split('"')[0]
    return conversation_id, run_id, token


def test_deleting_a_conversation_purges_its_content_at_once(app, client, finished_chat):
    conversation_id, run_id, token = finished_chat
    with app.app_context():
        before = counts(conversation_id)
        assert before["messages"] == 4 and before["events"] > 0 and before["shares"] == 1
        assert "Secret title" in stored_text(conversation_id)
    assert client.post(f"/chat/{conversation_id}/delete").status_code == 302
    with app.app_context():
        assert counts(conversation_id) == {"messages": 0, "events": 0, "shares": 0}
        assert stored_text(conversation_id) == []  # the row keeps no text
        conversation = db.session.get(Conversation, conversation_id)
        assert conversation.deleted_at is not None
    for path in (f"/chat/{conversation_id}", f"/chat/{conversation_id}/export.md",
                 f"/chat/{conversation_id}/export.json", f"/chat/{conversation_id}/title",
                 f"/chat/{conversation_id}/share", f"/runs/{run_id}/events", f"/runs/{run_id}/message",
                 f"/s/{token}"):
        assert client.get(path).status_code == 404, path
    for path in (f"/chat/{conversation_id}/messages", f"/chat/{conversation_id}/rename",
                 f"/chat/{conversation_id}/delete", f"/runs/{run_id}/stop"):
        assert client.post(path, data={"text": "x", "title": "x"}).status_code == 404, path
    assert "Secret" not in client.get("/chat/").text
    assert client.get("/chat/sidebar?q=Secret").text.count("conversation-item") == 0


def test_deleting_during_a_run_stores_nothing_afterwards(app, client, auth, scripted_model):
    started, release = threading.Event(), threading.Event()

    async def slow(messages, info):
        yield "Secret partial"
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.01)
        yield " and the secret rest"

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, slow))
    run_id = send(app, client, conversation_id, "Secret question", wait=False)
    assert started.wait(5)
    assert client.post(f"/chat/{conversation_id}/delete").status_code == 302
    release.set()
    execution.wait(run_id)
    run, message = outcome(app, run_id)
    assert run.status in ("cancelled", "succeeded") and not run.active
    assert message is None or message.content == ""
    with app.app_context():
        assert counts(conversation_id) == {"messages": 0, "events": 0, "shares": 0}
        assert stored_text(conversation_id) == []


def test_registered_purgers_run_for_conversations_and_users(app, client, auth):
    called: list = []
    steps = purge_steps(app)
    steps.conversation.append(lambda conversation: called.append(("conversation", conversation.id)))
    steps.user.append(lambda user: called.append(("user", user.id)))
    try:
        auth.login_as("admin")
        other_id = auth.create("user")
        with app.app_context():
            conversation = Conversation(user_id=other_id, agent_id=None, title="x")
            db.session.add(conversation)
            db.session.commit()
            conversation_id = conversation.id
        assert client.post(f"/admin/users/{other_id}/delete").status_code == 302
    finally:
        steps.conversation.pop()
        steps.user.pop()
    assert called == [("conversation", conversation_id), ("user", other_id)]


def test_deleting_a_user_purges_their_conversations_and_links(app, client, auth, scripted_model):
    auth.create("user", email="quinn@example.org")
    quinn = app.test_client()
    quinn.post("/login", data={"email": "quinn@example.org", "password": PASSWORD})
    conversation_id = start_chat(app, quinn, model_config_id=chat_model(scripted_model, words("Private")))
    run_id = send(app, quinn, conversation_id, "Private question")
    response = quinn.post(f"/chat/{conversation_id}/shares", data={"audience": "instance"}, headers=HX)
    token = response.text.split("/s/")[1].split('"')[0]
    # Quinn is also named on someone else's link.
    ria_id = auth.create("user", email="ria@example.org")
    with app.app_context():
        ria_chat = Conversation(user_id=ria_id, agent_id=None, title="Ria's")
        db.session.add(ria_chat)
        db.session.flush()
        quinn_user = db.session.scalar(db.select(User).where(User.email == "quinn@example.org"))
        ria_share = Share(conversation_id=ria_chat.id, owner_id=ria_id, audience="users", users=[quinn_user])
        db.session.add(ria_share)
        db.session.commit()
        quinn_id, ria_share_id = quinn_user.id, ria_share.id

    auth.login_as("admin")
    assert client.post(f"/admin/users/{quinn_id}/delete").status_code == 302
    with app.app_context():
        assert db.session.get(User, quinn_id) is None
        assert db.session.get(Conversation, conversation_id) is None  # gone with its owner
        assert db.session.get(Run, run_id) is None
        assert db.session.scalar(db.select(db.func.count(Message.id))
                                 .where(Message.conversation_id == conversation_id)) == 0
        assert db.session.scalar(db.select(db.func.count(RunEvent.id)).where(RunEvent.run_id == run_id)) == 0
        assert db.session.scalar(db.select(db.func.count(Share.id)).where(Share.owner_id == quinn_id)) == 0
        assert db.session.get(Share, ria_share_id).users == []
    assert client.get(f"/s/{token}").status_code == 404


def test_deleting_a_user_during_their_run_leaves_nothing(app, client, auth, scripted_model):
    started, release = threading.Event(), threading.Event()

    async def slow(messages, info):
        yield "Private partial"
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.01)
        yield " and more"

    auth.create("user", email="sam@example.org")
    sam = app.test_client()
    sam.post("/login", data={"email": "sam@example.org", "password": PASSWORD})
    conversation_id = start_chat(app, sam, model_config_id=chat_model(scripted_model, slow))
    run_id = send(app, sam, conversation_id, "Private question", wait=False)
    assert started.wait(5)
    auth.login_as("admin")
    with app.app_context():
        sam_id = db.session.scalar(db.select(User.id).where(User.email == "sam@example.org"))
    assert client.post(f"/admin/users/{sam_id}/delete").status_code == 302
    release.set()
    execution.wait(run_id)
    with app.app_context():
        assert db.session.get(Conversation, conversation_id) is None
        assert db.session.get(Run, run_id) is None
        assert db.session.scalar(db.select(db.func.count(Message.id))) == 0
        assert db.session.scalar(db.select(db.func.count(RunEvent.id))) == 0
