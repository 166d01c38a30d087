"""One person cannot take every run slot of a process: MAX_RUNS_PER_USER answers under way at once.

One user (or one chat-scoped token) could start a run in as many conversations as MAX_RUNS allowed.
The bound is counted in the database, in the transaction that adds the run, so runs that other
workers started count too: here they are rows another process would have written. Past it the send
is refused before anything is stored: the htmx composer keeps the text (429, Retry-After), the API
answers 429 `TOO_MANY_RUNS` with Retry-After. Unattended runs (triggers) are not a person's.
"""

from __future__ import annotations

import json
import os
import re
import threading

import pytest
from sqlalchemy import insert, text

from app import create_app
from app.api.tokens import create_token
from app.extensions import db
from app.models import Conversation, Message, Run, User
from app.models.chat import new_run_id
from app.runtime import capacity, execution
from tests.chat_driver import until
from tests.conftest import make_agent

HX = {"HX-Request": "true"}


def under_way(app, user_id: int, count: int, trigger: str = "chat", status: str = "running") -> None:
    """Runs of the user under way in other conversations, as other workers would have stored them."""
    with app.app_context():
        agent_id = make_agent().id
        for n in range(count):
            conversation = Conversation(user_id=user_id, agent_id=agent_id, title=f"Busy {n}",
                                        source="chat" if trigger == "chat" else trigger)
            db.session.add(conversation)
            db.session.flush()
            db.session.add(Run(conversation_id=conversation.id, user_id=user_id, agent_id=agent_id,
                               status=status, trigger=trigger, prompt="busy"))
        db.session.commit()


def fresh_conversation(app, user_id: int) -> int:
    with app.app_context():
        conversation = Conversation(user_id=user_id, agent_id=make_agent().id, title="Fresh")
        db.session.add(conversation)
        db.session.commit()
        return conversation.id


def stored(app, conversation_id: int) -> tuple[int, int]:
    with app.app_context():
        messages = db.select(db.func.count(Message.id)).where(Message.conversation_id == conversation_id)
        runs = db.select(db.func.count(Run.id)).where(Run.conversation_id == conversation_id)
        return db.session.scalar(messages), db.session.scalar(runs)


def test_the_htmx_send_past_the_bound_keeps_the_text_in_the_composer(app, client, auth):
    user_id = auth.login_as("user")
    under_way(app, user_id, 3)
    conversation_id = fresh_conversation(app, user_id)
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "One more question"}, headers=HX)
    assert response.status_code == 429 and response.headers["Retry-After"] == "5"
    assert response.headers["HX-Retarget"] == "#composer"
    assert "You have 3 answers running" in response.text
    assert re.search(r"<textarea[^>]*>\s*One more question\s*</textarea>", response.text)
    assert stored(app, conversation_id) == (0, 0)


def test_below_the_bound_a_send_goes_through(app, client, auth):
    user_id = auth.login_as("user")
    under_way(app, user_id, 2)
    under_way(app, user_id, 2, status="succeeded")  # ended runs are not under way
    conversation_id = fresh_conversation(app, user_id)
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "Hello"}, headers=HX)
    assert response.status_code == 200
    with app.app_context():
        execution.wait(db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id)))


@pytest.mark.parametrize("trigger", ["table", "webhook", "schedule"])
def test_unattended_runs_are_not_counted_against_the_person(app, client, auth, trigger):
    user_id = auth.login_as("user")
    under_way(app, user_id, 5, trigger=trigger)
    conversation_id = fresh_conversation(app, user_id)
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "Hello"}, headers=HX)
    assert response.status_code == 200
    with app.app_context():
        execution.wait(db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id)))


def test_another_users_runs_do_not_count(app, client, auth):
    other = auth.create("user")
    under_way(app, other, 3)
    user_id = auth.login_as("user")
    conversation_id = fresh_conversation(app, user_id)
    assert client.post(f"/chat/{conversation_id}/messages", data={"text": "Hello"}, headers=HX).status_code == 200
    with app.app_context():
        execution.wait(db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id)))


def test_the_workspace_panel_send_past_the_bound_stores_no_conversation(app, client, auth):
    user_id = auth.login_as("user")
    under_way(app, user_id, 3)
    with app.app_context():
        before = db.session.scalar(db.select(db.func.count(Conversation.id)))
    response = client.post("/assistant/", data={"text": "Build me a table"}, headers=HX)
    assert response.status_code == 422 and "You have 3 answers running" in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Conversation.id))) == before


@pytest.fixture
def token(app, auth) -> tuple[int, dict]:
    """A chat-scoped token's user and its Authorization header."""
    user_id = auth.create("user")
    with app.app_context():
        _token, secret = create_token(db.session.get(User, user_id), "Script", "chat", 7)
        db.session.commit()
    return user_id, {"Authorization": f"Bearer {secret}"}


def test_the_api_send_past_the_bound_is_429_too_many_runs(app, client, token):
    user_id, headers = token
    app.config["MAX_RUNS_PER_USER"] = 2
    under_way(app, user_id, 2)
    conversation_id = fresh_conversation(app, user_id)
    response = client.post(f"/api/conversations/{conversation_id}/messages", data=json.dumps({"message": "Hi"}),
                           content_type="application/json", headers=headers)
    assert response.status_code == 429 and response.headers["Retry-After"] == "5"
    assert response.json["code"] == "TOO_MANY_RUNS" and "You have 2 answers running" in response.json["message"]
    assert stored(app, conversation_id) == (0, 0)


def test_the_ag_ui_send_past_the_bound_is_429_and_gives_its_stream_slot_back(app, client, token):
    user_id, headers = token
    under_way(app, user_id, 3)
    conversation_id = fresh_conversation(app, user_id)
    before = capacity.streams()
    response = client.post("/api/agent", data=json.dumps({"threadId": conversation_id, "message": "Hi"}),
                           content_type="application/json", headers=headers)
    assert response.status_code == 429 and response.json["code"] == "TOO_MANY_RUNS"
    assert response.headers["Retry-After"] == "5"
    assert capacity.streams() == before and stored(app, conversation_id) == (0, 0)


@pytest.mark.parametrize(("name", "value"), [("MAX_RUNS_PER_USER", 0), ("MAX_RUNS_PER_USER", "many"),
                                             ("STREAM_HEARTBEAT_SECONDS", 0), ("STREAM_HEARTBEAT_SECONDS", True)])
def test_a_bad_bound_stops_the_start_with_its_name(settings, name, value):
    with pytest.raises(ValueError, match=f"SKILLDESK_{name} must be a whole number of at least 1"):
        create_app({**settings, name: value})


def lock_waits(app) -> int:
    """Sessions waiting for a lock (on a new connection: pg_stat_activity is one snapshot per transaction)."""
    with db.engine.connect() as connection:
        return connection.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")).scalar()


@pytest.mark.skipif(not os.environ.get("SKILLDESK_TEST_DATABASE_URL"),
                    reason="SQLite has one writer at a time: the run's insert takes the lock the count needs")
def test_two_workers_sending_at_once_count_one_after_the_other_on_postgresql(app, client, auth):
    """Another worker's send holds the user's row while its run is not yet committed: this send waits
    for it, then counts it (without the lock it counted only committed runs, and both went through)."""
    user_id = auth.login_as("user")
    app.config["MAX_RUNS_PER_USER"] = 1
    conversation_id = fresh_conversation(app, user_id)
    with app.app_context():
        agent_id = make_agent().id
        other_worker = db.engine.connect()
        other = other_worker.begin()
        other_worker.execute(db.select(User.id).where(User.id == user_id).with_for_update(key_share=True))
        busy = other_worker.execute(insert(Conversation).values(user_id=user_id, agent_id=agent_id, title="Busy",
                                                                source="chat").returning(Conversation.id)).scalar()
        other_worker.execute(insert(Run).values(id=new_run_id(), conversation_id=busy, user_id=user_id,
                                                agent_id=agent_id, status="running", trigger="chat", prompt="x"))
    answers: list = []
    sender = threading.Thread(target=lambda: answers.append(client.post(
        f"/chat/{conversation_id}/messages", data={"text": "Hello"}, headers=HX)), daemon=True)
    sender.start()
    try:
        with app.app_context():
            assert until(lambda: lock_waits(app) > 0 or not sender.is_alive()), \
                "the send never waited for the other worker's transaction"
            assert sender.is_alive(), f"the send did not wait: {answers[0].status_code}"
    finally:
        other.commit()
        other_worker.close()
        sender.join(10)
    assert answers[0].status_code == 429 and "You have 1 answers running" in answers[0].text
    assert stored(app, conversation_id) == (0, 0)
