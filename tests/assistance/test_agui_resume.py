"""The chat's own stream resumes after any of its ids (it reads the run events the AG-UI stream reads; the
AG-UI resume over HTTP is tests/agent_tools/test_agui_over_http.py), and how a stopped run ends in AG-UI.

Every AG-UI event is parsed and validated with ag-ui-protocol's models (`framed`, `check_order`).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading

from ag_ui.core import EventType

from app.runtime import execution
from tests.assistance.test_agui_stream import check_order, framed, stream
from tests.chat_driver import chat_model, outcome, send, sse_events, start_chat
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted

CLOCK = [{"name": "clock", "config": {}}]
CSRF = re.compile(r'name="csrf_token" value="[^"]*"')


def thread_of(app, client, model_config_id: int) -> int:
    with app.app_context():
        agent_id = make_agent(model_config_id=model_config_id).id
    return client.post("/api/conversations", data=json.dumps({"agentId": agent_id}),
                       content_type="application/json").json["data"]["id"]


def test_the_chats_own_stream_resumes_after_any_of_its_ids(app, client, auth, scripted_model):
    """The chat's stream reads the same stored events: each of its ids resumes to exactly what follows."""
    auth.login_as("user")
    script = Script([("current_time", {"timezone": "UTC"})], "It is late.")
    conversation_id = start_chat(app, client, model_config_id=scripted(scripted_model, script), skills=CLOCK)
    run_id = send(app, client, conversation_id, "Time?")
    everything = chat_events(client, run_id, 0)
    ids = [int(event["id"]) for event in everything]
    assert len(set(ids)) == len(ids) and ids == sorted(ids) and everything[-1]["event"] == "end"
    for after in [0, *ids]:
        assert chat_events(client, run_id, after) == [event for event in everything if int(event["id"]) > after]


def chat_events(client, run_id: str, after: int) -> list[dict[str, str]]:
    """The chat stream's events after an id, each form's CSRF token blanked (every rendering signs a fresh one)."""
    body = client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": str(after)}).text
    return [{**event, "data": CSRF.sub('name="csrf_token" value=""', event["data"])} for event in sse_events(body)]


def waiting_for(started: threading.Event, release: threading.Event):
    """A stream function that says "Partial", then waits until the test releases it."""

    async def model(messages, info):
        yield "Partial"
        started.set()
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 120)
        yield " and the rest."

    return model


def test_a_stopped_run_ends_with_run_error_and_a_finished_one_with_run_finished(app, client, auth, scripted_model):
    started, release = threading.Event(), threading.Event()
    auth.login_as("user")
    model = chat_model(scripted_model, waiting_for(started, release))
    conversation_id = thread_of(app, client, model)
    response = stream(client, {"threadId": conversation_id, "message": "Go"})
    try:
        chunks = iter(response.response)
        first = next(chunks).decode()
        [(_id, run_started)] = framed(first)
        assert started.wait(60)
        assert client.post(f"/runs/{run_started.run_id}/stop").status_code == 204
        events = [event for _id, event in framed(first + b"".join(chunks).decode())]
    finally:
        release.set()
        response.close()
    execution.wait(run_started.run_id)
    check_order(events)
    assert events[-1].type == EventType.RUN_ERROR and events[-1].code == "RUN_CANCELLED"
    assert EventType.RUN_FINISHED not in [e.type for e in events]
    assert outcome(app, run_started.run_id)[0].status == "cancelled"
    resumed_end = framed(client.get(f"/api/agent/{run_started.run_id}").get_data(as_text=True))
    assert [event.model_dump_json() for _id, event in resumed_end] == [e.model_dump_json() for e in events]

    finished = [event for _id, event in framed(stream(client, {"threadId": conversation_id, "message": "Again"})
                                                .get_data(as_text=True))]
    check_order(finished)
    assert finished[-1].type == EventType.RUN_FINISHED and finished[-1].outcome is None
