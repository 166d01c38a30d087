"""POST /api/agent: the same turn as the base transport, as AG-UI events parsed with ag-ui-protocol's models.

A plain answer, a tool call, a failure, a refusal and an interrupt, each checked against the order rules.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter

from app.api.tokens import create_token
from app.extensions import db
from app.guards.credentials import save_credential
from app.models import ApiToken, Conversation, Run, User
from app.models.base import utcnow
from app.policy.proposals import PENDING
from app.runtime import capacity, execution
from app.runtime.guardrails import REFUSAL
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted
from tests.tables.factory import make_table

EVENTS = TypeAdapter(Event)
LAYOUT = {"type": "string", "enum": ["table", "cards"]}


def stream(client, body: dict):
    return client.post("/api/agent", data=json.dumps(body), content_type="application/json")


def parse(response) -> list:
    """Parse every `event:`/`data:` pair with ag-ui's models; check the framing on the way."""
    return [event for _id, event in framed(response.get_data(as_text=True))]


def framed(body: str) -> list[tuple[int, Event]]:
    """Parse a stream's body into (id, event) pairs: each event validated by ag-ui's models, its framing checked."""
    assert "\r" not in body and (body == "" or body.endswith("\n\n"))
    pairs = []
    for block in body.strip("\n").split("\n\n") if body else []:
        if block.startswith(":"):
            continue  # a keep-alive comment, skipped as AG-UI clients skip it
        id_line, name_line, data_line = block.split("\n")
        assert id_line.startswith("id: ") and int(id_line[4:]) > 0
        assert name_line.startswith("event: ") and data_line.startswith("data: ")
        event = EVENTS.validate_json(data_line[len("data: "):])
        assert name_line == f"event: {event.type.value}"
        assert "null" not in data_line  # optional fields are left out, never null
        pairs.append((int(id_line[4:]), event))
    return pairs


def check_order(events) -> None:
    """RUN_STARTED first, RUN_FINISHED or RUN_ERROR last, and matched START/CONTENT/END and tool triples."""
    types = [e.type for e in events]
    assert types[0] == EventType.RUN_STARTED and types[-1] in (EventType.RUN_FINISHED, EventType.RUN_ERROR)
    assert types.count(EventType.RUN_STARTED) == 1 and sum(t in (EventType.RUN_FINISHED, EventType.RUN_ERROR)
                                                           for t in types) == 1
    open_calls, results = set(), set()
    for event in events:
        if event.type == EventType.TOOL_CALL_START:
            open_calls.add(event.tool_call_id)
        elif event.type in (EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END):
            assert event.tool_call_id in open_calls
        elif event.type == EventType.TOOL_CALL_RESULT:
            assert event.tool_call_id in open_calls and event.tool_call_id not in results
            results.add(event.tool_call_id)
    starts = [e.message_id for e in events if e.type == EventType.TEXT_MESSAGE_START]
    ends = [e.message_id for e in events if e.type == EventType.TEXT_MESSAGE_END]
    assert starts == ends


@pytest.fixture
def thread(app, client, auth, scripted_model):
    def make(script: Script, skills=None) -> int:
        auth.login_as("user")
        with app.app_context():
            agent_id = make_agent(skills=skills or [], model_config_id=scripted(scripted_model, script)).id
        return client.post("/api/conversations", data=json.dumps({"agentId": agent_id}),
                           content_type="application/json").json["data"]["id"]
    return make


def test_a_plain_answer(client, thread):
    response = stream(client, {"threadId": thread(Script("Hello there.")), "message": "Hi"})
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    events = parse(response)
    check_order(events)
    assert [e.type.value for e in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                              "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert events[2].delta == "Hello there." and events[-1].outcome is None


def test_a_tool_call(client, thread):
    script = Script([("current_time", {"timezone": "UTC"})], "It is late.")
    events = parse(stream(client, {"threadId": thread(script, [{"name": "clock", "config": {}}]), "message": "Time?"}))
    check_order(events)
    types = [e.type.value for e in events]
    assert types[:5] == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert events[1].tool_call_name == "current_time" and json.loads(events[2].delta) == {"timezone": "UTC"}


def test_a_failed_run_ends_with_run_error_and_a_coarse_code(client, thread):
    def broken(messages, info):
        raise RuntimeError("the model broke")

    script = Script("unused")
    script.stream = broken
    events = parse(stream(client, {"threadId": thread(script), "message": "Hi"}))
    check_order(events)
    assert events[-1].type == EventType.RUN_ERROR and events[-1].code == "RUN_FAILED"
    assert "the model broke" not in events[-1].message


def test_a_proposal_ends_the_run_with_an_interrupt_and_the_checked_answer(app, client, thread):
    with app.app_context():
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
    script = Script([("propose_preference_change", {"namespace": "ui", "key": "defaultListLayout",
                                                    "value": '"cards"', "reason": "Phones like cards."})],
                    "I have updated your layout.")
    conversation_id = thread(script, [{"name": "ui_proposals", "config": {}}])
    context = {"page": {"proposable": [{"kind": "preference", "schema": LAYOUT, "current": "table",
                                        "target": {"namespace": "ui", "key": "defaultListLayout"}}]}}
    events = parse(stream(client, {"threadId": conversation_id, "message": "Phone?", "context": context}))
    check_order(events)
    [content] = [e for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT]
    assert content.delta == PENDING["en"]  # never the claim, not even in a delta
    finished = events[-1]
    assert finished.type == EventType.RUN_FINISHED and finished.outcome.type == "interrupt"
    assert finished.outcome.interrupts[0].reason == "proposal"


def test_a_refusal_sends_the_stored_generic_message_then_run_error(app, client, auth, thread):
    secret = "ghp_7Hq2ZpL0vXw9Ks3Rt"
    conversation_id = thread(Script(f"Your token is {secret}."))
    with app.app_context():
        user_id = db.session.get(Conversation, conversation_id).user_id
        save_credential(user_id, "github", secret)
        db.session.commit()
    response = stream(client, {"threadId": conversation_id, "message": "My token?"})
    events = parse(response)
    check_order(events)
    assert [e.type.value for e in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                              "TEXT_MESSAGE_END", "RUN_ERROR"]
    assert events[2].delta == REFUSAL and events[-1].code == "REFUSED"
    assert secret not in response.get_data(as_text=True)
    stored = client.get(f"/api/conversations/{conversation_id}/messages").json["data"][-1]
    assert stored["content"] == REFUSAL and stored["metadata"] == {"status": "refused"}  # the code is not stored


@pytest.mark.parametrize(("body", "status"), [
    ({"threadId": 999999, "message": "Hi"}, 404),
    ({"threadId": "x", "message": "Hi"}, 422),
    ({"message": "Hi"}, 422),
])
def test_bad_requests_are_json(client, thread, body, status):
    thread(Script("Hi"))
    response = client.post("/api/agent", data=json.dumps(body), content_type="application/json",
                           headers={"Accept": "text/event-stream"})
    assert response.status_code == status and response.mimetype == "application/json"


def test_someone_elses_thread_is_404_and_a_control_plane_key_is_422(client, auth, thread):
    conversation_id = thread(Script("Hi"))
    bad = stream(client, {"threadId": conversation_id, "message": "Hi", "context": {"page": {"tools": []}}})
    assert bad.status_code == 422 and bad.json["code"] == "VALIDATION_FAILED"
    auth.logout()
    auth.login_as("user")
    assert stream(client, {"threadId": conversation_id, "message": "Hi"}).status_code == 404


def test_someone_elses_run_cannot_be_resumed(client, auth, thread):
    response = stream(client, {"threadId": thread(Script("Hi")), "message": "Hi"})
    run_id = parse(response)[0].run_id
    auth.logout()
    auth.login_as("user")
    assert client.get(f"/api/agent/{run_id}").status_code == 404


def test_ag_ui_streams_take_the_processs_stream_slots(app, client, thread):
    """Each AG-UI stream holds a request thread like the chat's SSE stream, so it counts against
    MAX_STREAMS; without a slot, a script opening resumes in a loop could take every thread."""
    conversation_id = thread(Script("Hi"))
    run_id = parse(stream(client, {"threadId": conversation_id, "message": "Hi"}))[0].run_id
    app.config["MAX_STREAMS"] = capacity.streams() + 1
    held = client.get(f"/api/agent/{run_id}")  # open, not read yet: it holds the last slot
    refused = client.get(f"/api/agent/{run_id}")
    assert refused.status_code == 503 and refused.json["code"] == "SERVICE_UNAVAILABLE"
    assert refused.headers["Retry-After"] == "5"
    sent = stream(client, {"threadId": conversation_id, "message": "Again"})
    assert sent.status_code == 503 and "not sent" in sent.json["message"]
    messages = client.get(f"/api/conversations/{conversation_id}/messages").json["data"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["Hi"]  # nothing stored for it
    held.get_data()
    held.close()
    assert client.get(f"/api/agent/{run_id}").status_code == 200


def test_the_stream_starts_before_the_run_ends(app, client, auth, scripted_model):
    """The events reach the client as the run goes: spectree's wrapper read the whole streamed body
    (get_data) to rebuild the answer, so nothing left before the run had ended."""
    answer_now = threading.Event()

    async def slow(messages, info):
        await asyncio.get_running_loop().run_in_executor(None, answer_now.wait, 30)
        yield "Done."

    auth.login_as("user")
    with app.app_context():
        agent_id = make_agent(model_config_id=scripted_model(stream_function=slow)).id
    conversation_id = client.post("/api/conversations", data=json.dumps({"agentId": agent_id}),
                                  content_type="application/json").json["data"]["id"]
    response = stream(client, {"threadId": conversation_id, "message": "Hi"})
    first = next(iter(response.response)).decode()  # the first event, read while the model still thinks
    with app.app_context():
        status = db.session.scalar(db.select(Run.status).where(Run.conversation_id == conversation_id))
    answer_now.set()
    rest = response.get_data(as_text=True)
    response.close()
    assert first.startswith("id: 1\nevent: RUN_STARTED") and status == "running"
    assert "Done." in rest


@pytest.mark.parametrize("change", ["revoke the token", "deactivate the user"])
def test_a_revoked_token_or_a_deactivated_user_ends_an_open_stream(app, client, auth, scripted_model, change):
    """As the chat's own stream ends on sign-out: the AG-UI stream of a token revoked meanwhile (or of a
    user deactivated meanwhile) stops at its next look, instead of following the run to its end."""
    answer_now = threading.Event()

    async def slow(messages, info):
        await asyncio.get_running_loop().run_in_executor(None, answer_now.wait, 30)
        yield "Done."

    auth.login_as("user")
    with app.app_context():
        agent_id = make_agent(model_config_id=scripted_model(stream_function=slow)).id
        user = db.session.scalar(db.select(User).where(User.role == "user"))
        token, secret = create_token(user, "Script", "chat", 7)
        db.session.commit()
        token_id = token.id
    conversation_id = client.post("/api/conversations", data=json.dumps({"agentId": agent_id}),
                                  content_type="application/json").json["data"]["id"]
    script = app.test_client()
    response = script.post("/api/agent", data=json.dumps({"threadId": conversation_id, "message": "Hi"}),
                           content_type="application/json", headers={"Authorization": f"Bearer {secret}"})
    chunks = iter(response.response)
    assert next(chunks).decode().startswith("id: 1\nevent: RUN_STARTED")
    with app.app_context():
        if change == "revoke the token":
            db.session.get(ApiToken, token_id).revoked_at = utcnow()
        else:
            db.session.get(User, db.session.get(ApiToken, token_id).user_id).active = False
        db.session.commit()
    rest = b"".join(chunks).decode()  # ends at the stream's next look, while the model still waits
    with app.app_context():
        run_id, status = db.session.execute(db.select(Run.id, Run.status)
                                            .where(Run.conversation_id == conversation_id)).one()
    answer_now.set()
    response.close()
    execution.wait(run_id)  # the run goes on to its end: let it finish before the test's database goes
    assert "RUN_FINISHED" not in rest and status == "running"
