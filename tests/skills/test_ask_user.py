"""Ask the user: a question ends the turn with its options as buttons; a click, a typed message or "discuss
instead" answers it and the turn goes on."""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelRequest, RetryPromptPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall

from app.chat.approvals import DISCUSS
from app.extensions import db
from app.models import Message, PendingCall, Run
from tests.chat_driver import calls_of, chat_model, resumed_run, send, start_chat, tool_results

SHORT = ["Red", "Blue"]
LONG = ["Ship everything in one parcel next Monday morning", "Ship each item as soon as it is in stock"]


class AskingModel:
    """Asks one question on a new prompt; reports the answer (or a retry) once it comes back."""

    def __init__(self, options: list[str], question: str = "Which colour?") -> None:
        self.options = options
        self.question = question
        self.requests: list[list] = []

    async def __call__(self, messages, info):
        self.requests.append(list(messages))
        parts = messages[-1].parts
        returns = [p for p in parts if isinstance(p, ToolReturnPart)]
        if any(isinstance(p, RetryPromptPart) for p in parts) or any(r.outcome != "success" for r in returns):
            yield "I will ask differently."
            return
        if returns:
            yield f"You answered: {returns[0].model_response_str()}"
            return
        args = {"question": self.question, "options": self.options}
        yield {
            0: DeltaToolCall(
                name="ask_user_question", json_args=json.dumps(args), tool_call_id=f"ask-{len(self.requests)}"
            )
        }


def agent(model_id: int, **settings) -> dict:
    """The agent these tests chat with (make_agent's arguments): the ask_user skill with these settings."""
    return {"model_config_id": model_id, "skills": [{"name": "ask_user", "config": settings}]}


def test_short_options_are_buttons_and_a_click_answers(app, client, auth, scripted_model):
    model = AskingModel(SHORT)
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, model)))
    send(app, client, conversation_id, "Paint my bike.")
    call = calls_of(app, conversation_id)[0]
    assert (call.kind, call.status, call.args) == (
        "question",
        "pending",
        {"question": "Which colour?", "options": SHORT},
    )
    assert call.details == {"card": "question", "buttons": True}

    page = client.get(f"/chat/{conversation_id}").text
    assert "Which colour?" in page and "Discuss instead" in page
    assert (
        '<button type="submit" name="answer" value="Red">Red</button>' in page and 'type="radio"' not in page
    )

    response = client.post(
        f"/approvals/{call.id}/answer", data={"answer": "Blue"}, headers={"HX-Request": "true"}
    )
    assert (
        response.status_code == 200 and "Answered: Blue" in response.text and "sse-connect" in response.text
    )
    run = resumed_run(app, call.id)
    assert run.status == "succeeded"
    assert tool_results(app, conversation_id) == ["Blue"]
    with app.app_context():
        assert (
            db.session.scalar(db.select(Message.content).where(Message.run_id == run.id))
            == "You answered: Blue"
        )
    assert (
        client.post(f"/approvals/{call.id}/answer", data={"answer": "Red"}).status_code == 302
    )  # flash + back
    assert tool_results(app, conversation_id) == ["Blue"]  # single use


def test_long_options_are_a_list_with_an_answer_button(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, AskingModel(LONG, "How to ship?"))))
    send(app, client, conversation_id, "Ship my order.")
    call = calls_of(app, conversation_id)[0]
    assert call.details["buttons"] is False
    page = client.get(f"/chat/{conversation_id}").text
    assert f'<input type="radio" name="answer" value="{LONG[0]}">' in page and ">Answer</button>" in page

    nothing = client.post(f"/approvals/{call.id}/answer", data={}, headers={"HX-Request": "true"})
    assert nothing.status_code == 422 and "Choose an option" in nothing.text
    client.post(f"/approvals/{call.id}/answer", data={"answer": LONG[1]}, headers={"HX-Request": "true"})
    resumed_run(app, call.id)
    assert tool_results(app, conversation_id) == [LONG[1]]


def test_a_typed_message_answers_the_question_and_is_not_sent_twice(app, client, auth, scripted_model):
    model = AskingModel(SHORT)
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, model)))
    send(app, client, conversation_id, "Paint my bike.")
    call = calls_of(app, conversation_id)[0]

    run_id = send(app, client, conversation_id, "Green, please")
    with app.app_context():
        run = db.session.get(Run, run_id)
        stored = db.session.get(PendingCall, call.id)
        assert run.status == "succeeded", run.error
        assert (stored.status, stored.resume_run_id, stored.answer["result"]) == (
            "answered",
            run_id,
            "Green, please",
        )
    assert tool_results(app, conversation_id) == ["Green, please"]
    prompts = [
        p.content
        for m in model.requests[-1]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    ]
    assert prompts == ["Paint my bike."]  # the typed answer went back as the tool result, not as a new prompt
    page = client.get(f"/chat/{conversation_id}").text
    assert "Answered: Green, please" in page and "Green, please" in page


def test_discuss_instead_resumes_with_a_request_to_talk_it_over(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, AskingModel(SHORT))))
    send(app, client, conversation_id, "Paint my bike.")
    call = calls_of(app, conversation_id)[0]
    response = client.post(
        f"/approvals/{call.id}/answer", data={"discuss": "1"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200 and "Discussed instead" in response.text
    resumed_run(app, call.id)
    assert tool_results(app, conversation_id) == [DISCUSS]


def test_too_many_options_are_sent_back_to_the_model(app, client, auth, scripted_model):
    auth.login_as("user")
    options = [f"Option {n}" for n in range(5)]
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, AskingModel(options)), max_options=3))
    run_id = send(app, client, conversation_id, "Pick for me.")
    with app.app_context():
        assert (
            db.session.scalar(db.select(PendingCall.id).where(PendingCall.conversation_id == conversation_id))
            is None
        )
        assert (
            db.session.scalar(
                db.select(Message.content).where(Message.run_id == run_id, Message.role == "assistant")
            )
            == "I will ask differently."
        )


def test_someone_else_cannot_answer(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, **agent(chat_model(scripted_model, AskingModel(SHORT))))
    send(app, client, conversation_id, "Paint my bike.")
    call = calls_of(app, conversation_id)[0]
    auth.logout()
    auth.login_as("admin")
    assert client.post(f"/approvals/{call.id}/answer", data={"answer": "Red"}).status_code == 404
    assert client.get(f"/approvals/{call.id}").status_code == 404
    assert calls_of(app, conversation_id)[0].status == "pending"
