"""Serving many people from one process: no connection held while waiting, backpressure, clients that leave."""

from __future__ import annotations

import asyncio
import threading

import httpx
from werkzeug.serving import make_server

from app.extensions import db
from app.models import Message, Run, User
from app.runtime import capacity, execution
from app.runtime import events as run_events
from tests.chat_driver import chat_model, last_run_id, read_in_thread, send, start_chat, until
from tests.conftest import PASSWORD, make_agent

HX = {"HX-Request": "true"}


def _slow_answer(release: threading.Event):
    async def model(messages, info):
        yield "First words. "
        while not release.is_set():
            await asyncio.sleep(0.01)
        yield "The rest."

    return model


def test_a_stream_follower_holds_no_connection_while_it_waits(app, client, auth, scripted_model):
    release = threading.Event()
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, _slow_answer(release)))
    run_id = send(app, client, conversation_id, "Hello", wait=False)
    with app.app_context():
        pool = db.engine.pool
    chunks: list[bytes] = []
    reader = read_in_thread(client, f"/runs/{run_id}/events", chunks)
    try:
        # Once the first words are through, nothing is written until the model goes on; each sample
        # is taken between two looks at the follower, so it falls inside one of its waits.
        assert until(lambda: any(b"event: text" in chunk for chunk in chunks)), "the first words never came"
        samples = []
        for _ in range(5):
            assert until(lambda: run_events.waiting(run_id) > 0), "the follower never waited"
            checked_out = pool.checkedout()
            if run_events.waiting(run_id) > 0:
                samples.append(checked_out)
        assert samples and set(samples) == {0}, f"connections checked out during the wait: {samples}"
    finally:
        release.set()
        reader.join(10)
        execution.wait(run_id)
    assert any(b"event: end" in chunk for chunk in chunks)


def _blocked_run(app, client, scripted_model, release: threading.Event) -> tuple[int, str]:
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, _slow_answer(release)))
    return conversation_id, send(app, client, conversation_id, "Hello", wait=False)


def _stored(app, conversation_id: int) -> tuple[int, int]:
    with app.app_context():
        messages = db.session.scalar(db.select(db.func.count()).select_from(Message)
                                     .where(Message.conversation_id == conversation_id))
        runs = db.session.scalar(db.select(db.func.count()).select_from(Run)
                                 .where(Run.conversation_id == conversation_id))
        return messages, runs


def test_a_turn_past_the_bound_of_runs_is_refused_with_503_and_nothing_is_stored(app, client, auth, scripted_model):
    release = threading.Event()
    auth.login_as("user")
    app.config["MAX_RUNS"] = 1
    _busy, run_id = _blocked_run(app, client, scripted_model, release)
    other = start_chat(app, client)
    try:
        response = client.post(f"/chat/{other}/messages", data={"text": "Are you there?"}, headers=HX)
        assert response.status_code == 503 and response.headers["Retry-After"] == "5"
        # An alert beside the page; the composer (and the text in it) is left as it was.
        assert response.headers["HX-Retarget"] == "#alerts" and 'id="composer"' not in response.text
        assert "Your message was not sent; send it again in 5 seconds." in response.text
        answer = client.post(f"/chat/{other}/messages", data={"text": "Are you there?"},
                             headers={"Accept": "application/json"})
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
        assert answer.get_json()["error"] == "busy"
        assert client.post(f"/chat/{other}/messages", data={"text": "Are you there?"}).status_code == 503
        assert _stored(app, other) == (0, 0)
    finally:
        release.set()
        execution.wait(run_id)
    assert client.post(f"/chat/{other}/messages", data={"text": "Are you there?"}, headers=HX).status_code == 200


def test_past_the_bound_of_streams_a_stream_and_a_turn_are_refused_with_503(app, client, auth, scripted_model):
    release = threading.Event()
    auth.login_as("user")
    app.config["MAX_STREAMS"] = capacity.streams() + 1
    _busy, run_id = _blocked_run(app, client, scripted_model, release)
    chunks: list[bytes] = []
    reader = read_in_thread(client, f"/runs/{run_id}/events", chunks)
    other = start_chat(app, client)
    try:
        assert until(lambda: run_events.waiting(run_id) > 0), "the first stream never started"
        second = client.get(f"/runs/{run_id}/events", headers=HX)
        assert second.status_code == 503 and second.headers["Retry-After"] == "5"
        response = client.post(f"/chat/{other}/messages", data={"text": "Are you there?"}, headers=HX)
        assert response.status_code == 503 and "streaming as many answers as it can" in response.text
        assert _stored(app, other) == (0, 0)
    finally:
        release.set()
        reader.join(10)
        execution.wait(run_id)
    assert any(b"event: end" in chunk for chunk in chunks)
    assert until(lambda: capacity.streams() < app.config["MAX_STREAMS"])  # the slot came back


def test_a_stream_whose_client_went_away_gives_its_thread_back_while_the_run_goes_on(app, auth, scripted_model):
    release = threading.Event()
    user_id = auth.create("user")
    with app.app_context():
        email = db.session.get(User, user_id).email
        agent_id = make_agent(model_config_id=chat_model(scripted_model, _slow_answer(release))).id
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    before = capacity.streams()
    run_id = None
    try:
        with httpx.Client(base_url=base, timeout=10) as browser:
            assert browser.post("/login", data={"email": email, "password": PASSWORD}).status_code == 302
            conversation = browser.post("/chat/", data={"agent_id": agent_id}).headers["location"]
            conversation_id = int(conversation.rstrip("/").rsplit("/", 1)[-1])
            assert browser.post(f"/chat/{conversation_id}/messages", data={"text": "Hello"}).status_code == 302
            run_id = last_run_id(app, conversation_id)
            with browser.stream("GET", f"/runs/{run_id}/events") as stream:
                assert stream.status_code == 200
                assert until(lambda: run_events.waiting(run_id) > 0), "the stream never waited"
                assert capacity.streams() == before + 1
            # The client has gone; the run goes on.
        assert until(lambda: capacity.streams() == before), "the stream kept its thread after the client left"
        assert until(lambda: run_events.waiting(run_id) == 0)
        with app.app_context():
            assert db.session.get(Run, run_id).status == "running"
    finally:
        release.set()
        if run_id:
            execution.wait(run_id)
        server.shutdown()
        server.server_close()


def test_a_turn_reuses_the_history_the_last_one_stored_but_never_a_changed_one(app, client, auth, scripted_model):
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from app.models import Conversation

    seen: list[int] = []

    async def model(messages, info):
        seen.append(len(messages))
        yield "ok"

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model))
    send(app, client, conversation_id, "One")
    send(app, client, conversation_id, "Two")
    assert seen == [1, 3]  # the second turn got the first one's question and answer
    with app.app_context():  # the context changes outside a run (as /compact or a clearing does)
        db.session.get(Conversation, conversation_id).model_context = ModelMessagesTypeAdapter.dump_json([]).decode()
        db.session.commit()
    send(app, client, conversation_id, "Three")
    assert seen == [1, 3, 1]
