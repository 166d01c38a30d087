"""One rule for every tool's step: a refusal or an error is a failed step, in the stored message, the stream
and the page, whichever skill refused."""

from __future__ import annotations

import re

from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall

from app.extensions import db
from app.models import Conversation, Message, User
from tests.chat_driver import chat_model, outcome, send, sse_events, start_chat
from tests.conftest import make_agent
from tests.tables.factory import make_table

CALLS = [  # each refused or failing: no permission, a forbidden address, a throw, an agent out of reach
    ("insert_orders", '{"values": {"customer": "Mallory"}}'),
    ("http_request", '{"url": "http://127.0.0.1/admin"}'),
    ("fail_loudly", "{}"),
    ("ask_vault", '{"request": "open up"}'),
]


def refusing_agent(app, scripted_model) -> int:
    async def model(messages, info):
        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            for index, (name, args) in enumerate(CALLS):
                yield {index: DeltaToolCall(name=name, json_args=args, tool_call_id=f"call-{index}")}
            return
        yield "All refused."

    with app.app_context():
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
        vault = make_agent("Vault", roles=["admin"])
        skills = [
            {"name": "table", "config": {"tables": ["orders"], "allow_insert": True}},
            {"name": "http_request", "config": {}},
            {"name": "javascript", "config": {"name": "fail_loudly", "description": "Fail.", "arguments": [],
                                              "code": 'throw new Error("no");'}},
            {"name": "subagent", "config": {"agent": vault.name, "tool_name": "ask_vault"}},
        ]
        return make_agent("Refuser", skills=skills, model_config_id=chat_model(scripted_model, model)).id


def test_every_refusal_and_error_is_a_failed_step(app, client, auth, scripted_model):
    auth.login_as("user", name="Mallory")
    conversation_id = start_chat(app, client, agent_id=refusing_agent(app, scripted_model))
    run_id = send(app, client, conversation_id, "Try everything")
    run, message = outcome(app, run_id)
    assert run.status == "succeeded", run.error
    assert [(step["name"], step["failed"]) for step in message.steps] == [(name, True) for name, _ in CALLS]
    assert "may not insert rows" in message.steps[0]["result"]

    results = [e["data"] for e in sse_events(client.get(f"/runs/{run_id}/events").text)
               if e["event"] == "tool_result"]
    assert len(results) == len(CALLS) and all('class="step-state">failed<' in r for r in results)
    page = client.get(f"/chat/{conversation_id}").text
    assert re.findall(r'class="step-state">(\w+)<', page) == ["failed"] * len(CALLS)


def test_a_step_whose_arguments_nest_thousands_deep_still_renders(app, client, auth):
    """Arguments are the model's text (a prompt-injected model writes what it is told): pretty-printing
    them parsed JSON recursively, and RecursionError made the chat page a 500 for good."""
    auth.login_as("user")
    deep = "[" * 5000 + "]" * 5000
    with app.app_context():
        user = db.session.scalar(db.select(User).where(User.role == "user"))
        conversation = Conversation(user_id=user.id, agent_id=make_agent().id, title="Deep")
        db.session.add(conversation)
        db.session.flush()
        db.session.add(Message(conversation_id=conversation.id, role="assistant", content="Done.", meta={},
                               steps=[{"id": "c1", "name": "lookup", "args": deep, "result": "ok"}]))
        db.session.commit()
        conversation_id = conversation.id
    page = client.get(f"/chat/{conversation_id}")
    assert page.status_code == 200 and "[[[[" in page.text and "lookup" in page.text
