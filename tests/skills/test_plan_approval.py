"""Plan approval: a plan ends the turn as a card; Approve resumes with the approval prompt.

Revise resumes with the changes the user asked for; the card is single use and survives a restart.
"""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelResponse, ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall

from app import create_app
from app.extensions import db
from app.models import Message, PendingCall, Run
from tests.chat_driver import calls_of, chat_model, model_context, resumed_run, send, start_chat, tool_returns

PLAN = "1. **Read** the orders\n2. Cancel the late ones <script>alert(1)</script>"
APPROVAL_PROMPT = "Carry out the approved plan now. [[approved-marker]]"


class PlanningModel:
    """Submits a plan on a new prompt; reports the tool's result when it comes back; notes instructions."""

    def __init__(self) -> None:
        self.instructions: list[str | None] = []
        self.requests: list[list] = []

    async def __call__(self, messages, info):
        self.requests.append(list(messages))
        self.instructions.append(info.instructions)
        returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returns:
            yield f"The plan came back: {returns[0].model_response_str()}"
            return
        yield {
            0: DeltaToolCall(
                name="submit_plan_for_approval",
                json_args=json.dumps({"plan": PLAN}),
                tool_call_id=f"plan-{len(self.requests)}",
            )
        }


def agent(model_id: int) -> dict:
    """The agent these tests chat with (make_agent's arguments): plan approval with the approval prompt."""
    return {"model_config_id": model_id,
            "skills": [{"name": "plan_approval", "config": {"approval_prompt": APPROVAL_PROMPT}}]}


def test_a_plan_ends_the_turn_as_a_stored_card(app, client, auth, scripted_model):
    model = PlanningModel()
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, model)))
    run_id = send(app, client, conversation_id, "Tidy up the late orders.")

    with app.app_context():
        run = db.session.get(Run, run_id)
        message = db.session.scalar(
            db.select(Message).where(Message.run_id == run_id, Message.role == "assistant")
        )
        assert (run.status, run.waiting_for) == ("waiting", "plan")
        call = db.session.scalar(db.select(PendingCall).where(PendingCall.message_id == message.id))
        assert message.meta["pending"] == [
            {"id": call.id, "kind": "plan", "tool": "submit_plan_for_approval",
             "expires_at": call.expires_at.isoformat()}
        ]
        assert (call.kind, call.status, call.args["plan"]) == ("plan", "pending", PLAN)
        assert call.details["approval_prompt"] == APPROVAL_PROMPT
        assert message.steps == []  # the card stands for the call; no step stays "running…"
    history = model_context(app, conversation_id)
    assert (
        isinstance(history[-1], ModelResponse)
        and history[-1].tool_calls[0].tool_name == "submit_plan_for_approval"
    )

    page = client.get(f"/chat/{conversation_id}").text
    assert f'id="call-{call.id}"' in page and "Plan for your approval" in page
    assert "<strong>Read</strong>" in page and "<script>alert(1)" not in page  # markdown, sanitized
    assert f"/approvals/{call.id}/plan" in page


def test_approve_resumes_with_approved_and_the_approval_prompt_once(app, client, auth, scripted_model):
    model = PlanningModel()
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, model)))
    send(app, client, conversation_id, "Tidy up the late orders.")
    call = calls_of(app, conversation_id)[-1]

    response = client.post(
        f"/approvals/{call.id}/plan", data={"decision": "approve"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert f'id="call-{call.id}"' in response.text and "Approved" in response.text
    assert 'hx-swap-oob="beforeend:#transcript"' in response.text and "sse-connect" in response.text

    run = resumed_run(app, call.id)
    assert run.status == "succeeded" and run.prompt is None and run.trigger == "resume"
    assert APPROVAL_PROMPT in model.instructions[-1]  # injected for the run that follows the approval
    assert APPROVAL_PROMPT not in (model.instructions[0] or "")
    returns = tool_returns(app, conversation_id)
    assert [(r.tool_name, r.content) for r in returns] == [("submit_plan_for_approval", "approved")]
    with app.app_context():
        answer = db.session.scalar(db.select(Message.content).where(Message.run_id == run.id))
        stored = db.session.get(PendingCall, call.id)
        assert answer == "The plan came back: approved"
        assert stored.status == "answered" and stored.answered_by_id is not None

    again = client.post(
        f"/approvals/{call.id}/plan", data={"decision": "approve"}, headers={"HX-Request": "true"}
    )
    assert again.status_code == 409 and "Approved" in again.text and "answered already" in again.text
    with app.app_context():
        assert (
            db.session.scalar(db.select(db.func.count(Run.id)).where(Run.conversation_id == conversation_id))
            == 2
        )
    later = send(app, client, conversation_id, "Thanks, next one.")  # the chat goes on normally afterwards
    with app.app_context():
        assert db.session.get(Run, later).status == "waiting"  # a new plan waits for approval in its turn


def test_revise_needs_words_and_sends_them_back_as_the_result(app, client, auth, scripted_model):
    model = PlanningModel()
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, model)))
    send(app, client, conversation_id, "Tidy up the late orders.")
    call = calls_of(app, conversation_id)[-1]

    empty = client.post(
        f"/approvals/{call.id}/plan",
        data={"decision": "revise", "changes": "  "},
        headers={"HX-Request": "true"},
    )
    assert (
        empty.status_code == 422
        and "Say what should change" in empty.text
        and 'aria-invalid="true"' in empty.text
    )
    assert calls_of(app, conversation_id)[-1].status == "pending"

    response = client.post(
        f"/approvals/{call.id}/plan", data={"decision": "revise", "changes": "Skip step 2."}
    )
    assert response.status_code == 302  # without htmx: post/redirect/get
    resumed_run(app, call.id)
    returns = [p.content for p in tool_returns(app, conversation_id)]
    assert len(returns) == 1 and "Skip step 2." in returns[0] and returns[0] != "approved"
    assert APPROVAL_PROMPT not in (model.instructions[-1] or "")
    page = client.get(f"/chat/{conversation_id}").text
    assert "Changes requested" in page and "Skip step 2." in page


def test_typing_a_message_asks_for_those_changes(app, client, auth, scripted_model):
    model = PlanningModel()
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, model)))
    send(app, client, conversation_id, "Tidy up the late orders.")
    call = calls_of(app, conversation_id)[-1]

    run_id = send(app, client, conversation_id, "Only cancel orders older than a week.")
    stored = calls_of(app, conversation_id)[-1]
    assert stored.id == call.id and stored.status == "answered" and stored.resume_run_id == run_id
    returns = [p.content for p in tool_returns(app, conversation_id)]
    assert "Only cancel orders older than a week." in returns[0]


def test_only_the_owner_reaches_the_card_and_it_survives_a_restart(
    app, client, auth, scripted_model, settings
):
    model = PlanningModel()
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, model)))
    send(app, client, conversation_id, "Tidy up the late orders.")
    call = calls_of(app, conversation_id)[-1]

    other = app.test_client()
    AuthOther = type(auth)
    AuthOther(app, other).login_as("user")
    assert other.get(f"/approvals/{call.id}").status_code == 404
    assert other.post(f"/approvals/{call.id}/plan", data={"decision": "approve"}).status_code == 404
    assert calls_of(app, conversation_id)[-1].status == "pending"

    # A new app on the same database (what a restart is) shows the same card and takes the answer.
    restarted = create_app(dict(settings))
    try:
        restarted_client = restarted.test_client()
        with client.session_transaction() as session:
            cookie = dict(session)
        with restarted_client.session_transaction() as session:
            session.update(cookie)
        page = restarted_client.get(f"/chat/{conversation_id}").text
        assert f'id="call-{call.id}"' in page and "Approve" in page
        response = restarted_client.post(
            f"/approvals/{call.id}/plan", data={"decision": "approve"}, headers={"HX-Request": "true"}
        )
        assert response.status_code == 200
        assert resumed_run(app, call.id).status == "succeeded"
    finally:
        with restarted.app_context():
            db.engine.dispose()
