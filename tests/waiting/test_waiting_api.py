"""The base JSON API says when a turn waits for a person, shows what it waits for, and takes the answer."""

from __future__ import annotations

from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall

from app.runtime import execution
from app.runtime.untrusted import unfence
from tests.chat_driver import chat_model
from tests.conftest import make_agent
from tests.waiting.test_waiting_inbox import token_for


async def asking(messages, info):
    """Asks which colour, then says what it was told."""
    returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    if returned:
        yield f"You chose: {unfence(returned[0].model_response_str())}"
        return
    yield {0: DeltaToolCall(name="ask_user_question", json_args='{"question": "Which colour?", '
                                                                '"options": ["Red", "Blue"]}', tool_call_id="q1")}


def test_a_turn_that_ends_on_a_question_answers_waiting_with_the_question_and_how_to_answer_it(
        app, client, auth, scripted_model):
    user_id = auth.login_as("user")
    with app.app_context():
        agent_id = make_agent("Painter", model_config_id=chat_model(scripted_model, asking),
                              skills=[{"name": "ask_user", "config": {}}]).id
    headers = token_for(app, user_id)
    conversation_id = client.post("/api/conversations", json={"agentId": agent_id}, headers=headers).json["data"]["id"]

    sent = client.post(f"/api/conversations/{conversation_id}/messages", json={"message": "Paint it"},
                       headers=headers)
    assert sent.status_code == 201
    message = sent.json["data"]
    assert message["content"] == "" and message["metadata"]["status"] == "waiting"
    assert message["metadata"]["waitingFor"] == "question"
    [pending] = message["metadata"]["pending"]
    assert (pending["kind"], pending["question"], pending["options"], pending["status"]) == (
        "question", "Which colour?", ["Red", "Blue"], "pending")
    assert pending["answer"]["href"] == f"/api/conversations/{conversation_id}/answers"
    assert pending["expiresAt"] is not None
    listed = client.get(f"/api/conversations/{conversation_id}/messages", headers=headers).json["data"]
    assert listed[-1]["metadata"]["pending"][0]["id"] == pending["id"]
    assert [c["id"] for c in client.get("/api/approvals", headers=headers).json["data"]] == [pending["id"]]

    answers = f"/api/conversations/{conversation_id}/answers"
    assert client.post(answers, json={"callId": pending["id"]}, headers=headers).status_code == 422
    wrong = client.post(answers, json={"callId": 999_999, "answer": "Red"}, headers=headers)
    assert wrong.status_code == 404
    stranger = client.post(f"/api/approvals/{pending['id']}", json={"decision": "allow"}, headers=headers)
    assert stranger.status_code == 422  # a question is answered at /answers, as its `answer` says

    answered = client.post(answers, json={"callId": pending["id"], "answer": "Blue"}, headers=headers)
    assert answered.status_code == 200
    run_id = answered.json["data"]["runId"]
    assert answered.json["data"]["call"]["decision"]["outcome"] == "answered"
    execution.wait(run_id)
    messages = client.get(f"/api/conversations/{conversation_id}/messages", headers=headers).json["data"]
    assert messages[-1]["content"] == "You chose: Blue" and messages[-1]["metadata"]["status"] == "succeeded"
    first = next(m for m in messages if m["metadata"].get("pending"))
    assert first["metadata"]["status"] == "succeeded" and "waitingFor" not in first["metadata"]
    assert first["metadata"]["pending"][0]["decision"]["answer"] == "Blue"

    again = client.post(answers, json={"callId": pending["id"], "answer": "Red"}, headers=headers)
    assert again.status_code == 409 and again.json["code"] == "ALREADY_DECIDED"
    assert again.json["call"]["status"] == "answered"


def test_the_openapi_document_describes_the_approvals_routes(client):
    paths = client.get("/api/openapi.json").json["paths"]
    assert {"/api/approvals", "/api/approvals/{call_id}", "/api/conversations/{conversation_id}/answers"} <= set(paths)
    decide = paths["/api/approvals/{call_id}"]["post"]
    assert "409" in decide["responses"] and "requestBody" in decide


def test_the_agui_stream_ends_a_waiting_turn_with_an_interrupt_that_says_until_when(app, client, auth,
                                                                                    scripted_model):
    from tests.assistance.test_agui_stream import parse, stream

    auth.login_as("user")
    with app.app_context():
        agent_id = make_agent("Painter", model_config_id=chat_model(scripted_model, asking),
                              skills=[{"name": "ask_user", "config": {}}]).id
    conversation_id = client.post("/api/conversations", json={"agentId": agent_id}).json["data"]["id"]
    events = parse(stream(client, {"threadId": conversation_id, "message": "Paint it"}))
    finished = events[-1]
    assert finished.type.value == "RUN_FINISHED" and finished.outcome.type == "interrupt"
    [interrupt] = finished.outcome.interrupts
    listed = client.get(f"/api/conversations/{conversation_id}/messages").json["data"]
    [pending] = listed[-1]["metadata"]["pending"]
    assert (interrupt.id, interrupt.reason, interrupt.message) == (f"call-{pending['id']}", "question",
                                                                   "ask_user_question")
    assert interrupt.expires_at == pending["expiresAt"].replace("Z", "+00:00")
