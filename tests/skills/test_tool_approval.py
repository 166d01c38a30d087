"""Tool approval: a chosen tool waits for Allow once / Always in this chat / Deny; decisions are audited."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel
from pydantic_ai.messages import ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall
from pydantic_ai.toolsets import FunctionToolset

from app.accounts.users import delete_user
from app.extensions import db
from app.models import ApprovalRecord, Message, Run, User
from app.runtime.deferred import SUPERSEDED
from app.runtime.skill import Skill
from app.runtime.untrusted import unfence
from app.skills.tool_approval import Config
from tests.chat_driver import answer_of, calls_of, chat_model, resumed_run, send, start_chat, tool_returns


def records_skill(deleted: list[int]) -> Skill:
    """A skill whose tools have effects the test can see: delete_record (guarded) and count_records (not)."""

    class Settings(BaseModel):
        pass

    def build(config, ctx):
        toolset = FunctionToolset()

        @toolset.tool_plain
        def delete_record(record_id: int) -> str:
            """Delete a record."""
            deleted.append(record_id)
            return f"Record {record_id} deleted."

        @toolset.tool_plain
        def count_records() -> str:
            """Count the records."""
            return "42 records."

        return toolset

    return Skill(name="records", title="Records", config=Settings, build=build)


class CallingModel:
    """Calls the tool named in the prompt ("delete 7", "count"); reports every result once they come back."""

    def __init__(self) -> None:
        self.requests: list[list] = []

    async def __call__(self, messages, info):
        self.requests.append(list(messages))
        parts = messages[-1].parts
        returns = [p for p in parts if isinstance(p, ToolReturnPart)]
        prompt = next((p.content for p in parts if isinstance(p, UserPromptPart)), "")
        calls = [("delete_record", {"record_id": int(n)}) for n in re.findall(r"delete (\d+)", prompt)]
        calls += [("count_records", {})] if "count" in prompt else []
        if calls:
            for index, (name, args) in enumerate(calls):
                yield {
                    index: DeltaToolCall(
                        name=name, json_args=json.dumps(args), tool_call_id=f"c{len(self.requests)}-{index}"
                    )
                }
        elif returns:
            yield " | ".join(f"{r.tool_name}: {unfence(r.model_response_str())}" for r in returns)
        else:
            yield "Nothing to do."


def clerk(model_id: int, approval: dict | None = None) -> dict:
    """The agent these tests chat with (make_agent's arguments): the records skill behind tool approval."""
    return {"name": "Clerk", "model_config_id": model_id, "skills": [
        {"name": "records", "config": {}},
        {"name": "tool_approval", "config": approval or {"tools": ["delete_*"]}},
    ]}


def records(app) -> list[ApprovalRecord]:
    with app.app_context():
        found = list(db.session.scalars(db.select(ApprovalRecord).order_by(ApprovalRecord.id)))
        db.session.expunge_all()
        return found


def test_settings_take_names_and_patterns():
    assert Config().tools == ["*"] and Config().allow_always is True
    assert Config(tools=[" delete_* ", "", "http_request"]).tools == ["delete_*", "http_request"]


def test_a_guarded_call_waits_and_allow_once_runs_it(app, client, auth, scripted_model):
    deleted: list[int] = []
    app.extensions["skills"]["records"] = records_skill(deleted)
    user_id = auth.login_as("user")
    conversation_id = start_chat(app, client, **clerk(chat_model(scripted_model, CallingModel())))
    run_id = send(app, client, conversation_id, "delete 7 and count")

    assert deleted == []  # nothing ran before the user decided
    [call] = calls_of(app, conversation_id)
    assert (call.kind, call.tool_name, call.args, call.details) == (
        "approval",
        "delete_record",
        {"record_id": 7},
        {"allow_always": True},
    )
    [record] = records(app)
    with app.app_context():
        email = db.session.get(User, user_id).email
        message = db.session.scalar(
            db.select(Message).where(Message.run_id == run_id, Message.role == "assistant")
        )
        # Its tool did not run: the run waits for a person (it did not succeed).
        assert (message.meta["status"], message.meta["waiting_for"]) == ("waiting", "approval")
        assert db.session.get(Run, run_id).status == "waiting" and db.session.get(Run, run_id).finished_at is None
        assert message.meta["pending"] == [{"id": call.id, "kind": "approval", "tool": "delete_record",
                                            "expires_at": call.expires_at.isoformat()}]
        assert [step["name"] for step in message.steps] == ["count_records"]  # the unguarded tool ran
    assert (record.status, record.user_id, record.requested_by, record.tool_name, record.arguments) == (
        "pending",
        user_id,
        email,
        "delete_record",
        '{"record_id": 7}',
    )
    assert record.agent_name.startswith("Clerk") and record.decided_at is None

    page = client.get(f"/chat/{conversation_id}").text
    assert "Allow this tool call?" in page and "Allow once" in page and "Always in this chat" in page
    assert "Deny" in page and "&#34;record_id&#34;: 7" in page

    response = client.post(
        f"/approvals/{call.id}/decision", data={"decision": "once"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200 and "Allowed once" in response.text
    resumed = resumed_run(app, call.id)
    assert deleted == [7]
    # The model sees every result of its calls at once: the allowed one and the one that ran before.
    assert answer_of(app, resumed.id) == "delete_record: Record 7 deleted. | count_records: 42 records."
    [record] = records(app)
    assert (record.status, record.scope, record.decided_by_id, record.decided_by) == (
        "allowed",
        "once",
        user_id,
        email,
    )
    assert record.decided_at is not None
    with app.app_context():  # the waiting run ended with the run that carried the decision
        assert (db.session.get(Run, run_id).status, resumed.status, resumed.user_id) == ("succeeded",) * 2 + (user_id,)
        assert resumed.origin_run_id == run_id

    send(app, client, conversation_id, "delete 8")  # "once" is once: the next call asks again
    assert [c.tool_name for c in calls_of(app, conversation_id) if c.status == "pending"] == ["delete_record"]
    assert deleted == [7]


def test_deny_sends_the_reason_and_never_runs_the_tool(app, client, auth, scripted_model):
    deleted: list[int] = []
    app.extensions["skills"]["records"] = records_skill(deleted)
    auth.login_as("user")
    conversation_id = start_chat(app, client, **clerk(chat_model(scripted_model, CallingModel())))
    send(app, client, conversation_id, "delete 7")
    [call] = calls_of(app, conversation_id)

    response = client.post(
        f"/approvals/{call.id}/decision",
        data={"decision": "deny", "reason": "That record is still in use."},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200 and "Denied" in response.text and "still in use" in response.text
    resumed = resumed_run(app, call.id)
    assert deleted == []
    assert (
        answer_of(app, resumed.id) == "delete_record: The user denied this call: That record is still in use."
    )
    [record] = records(app)
    assert (record.status, record.scope, record.reason) == ("denied", None, "That record is still in use.")
    again = client.post(
        f"/approvals/{call.id}/decision", data={"decision": "once"}, headers={"HX-Request": "true"}
    )
    assert again.status_code == 409 and "Denied" in again.text
    assert deleted == []


def test_always_in_this_chat_lets_later_calls_through_in_that_chat_only(app, client, auth, scripted_model):
    deleted: list[int] = []
    app.extensions["skills"]["records"] = records_skill(deleted)
    auth.login_as("user")
    model_id = chat_model(scripted_model, CallingModel())
    conversation_id = start_chat(app, client, **clerk(model_id))
    send(app, client, conversation_id, "delete 1 and delete 2")
    first, second = calls_of(app, conversation_id)

    client.post(
        f"/approvals/{first.id}/decision", data={"decision": "always"}, headers={"HX-Request": "true"}
    )
    resumed = resumed_run(app, first.id)
    # The other waiting call of the same tool went with it (the two calls run concurrently, in either order).
    assert sorted(deleted) == [1, 2]
    assert answer_of(app, resumed.id) == "delete_record: Record 1 deleted. | delete_record: Record 2 deleted."

    run_id = send(app, client, conversation_id, "delete 3")
    assert sorted(deleted) == [1, 2, 3] and answer_of(app, run_id) == "delete_record: Record 3 deleted."
    assert [c.status for c in calls_of(app, conversation_id)] == ["answered", "answered"]  # no new card
    assert [(r.status, r.scope) for r in records(app)] == [
        ("allowed", "always"),
        ("allowed", "standing"),
        ("allowed", "standing"),
    ]

    elsewhere = start_chat(app, client, **clerk(model_id))
    send(app, client, elsewhere, "delete 4")
    assert sorted(deleted) == [1, 2, 3] and [c.status for c in calls_of(app, elsewhere)] == ["pending"]


def test_always_can_be_turned_off(app, client, auth, scripted_model):
    app.extensions["skills"]["records"] = records_skill([])
    auth.login_as("user")
    conversation_id = start_chat(app, client, **clerk(chat_model(scripted_model, CallingModel()),
                                                     approval={"tools": ["*"], "allow_always": False}))
    send(app, client, conversation_id, "delete 7")
    [call] = calls_of(app, conversation_id)
    assert "Always in this chat" not in client.get(f"/chat/{conversation_id}").text
    assert client.post(f"/approvals/{call.id}/decision", data={"decision": "always"}).status_code == 400


def test_a_typed_message_skips_the_waiting_call(app, client, auth, scripted_model):
    deleted: list[int] = []
    app.extensions["skills"]["records"] = records_skill(deleted)
    auth.login_as("user")
    conversation_id = start_chat(app, client, **clerk(chat_model(scripted_model, CallingModel())))
    send(app, client, conversation_id, "delete 7")
    [call] = calls_of(app, conversation_id)

    run_id = send(app, client, conversation_id, "Actually, count")
    assert deleted == []
    with app.app_context():
        run = db.session.get(Run, run_id)
        assert run.status == "succeeded", run.error
    denied = [p for p in tool_returns(app, conversation_id) if p.tool_name == "delete_record"]
    assert denied[0].content == SUPERSEDED
    assert answer_of(app, run_id) == "count_records: 42 records."  # the typed message reached the model
    [record] = records(app)
    assert (record.status, record.reason) == ("denied", SUPERSEDED)
    assert "you wrote a message instead" in client.get(f"/chat/{conversation_id}").text


def test_asking_the_user_never_needs_approval(app, client, auth, scripted_model):
    async def model(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield "Thanks."
            return
        yield {
            0: DeltaToolCall(
                name="ask_user_question",
                json_args='{"question": "Sure?", "options": ["Yes"]}',
                tool_call_id="q1",
            )
        }

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model), skills=[
        {"name": "ask_user", "config": {}},
        {"name": "tool_approval", "config": {"tools": ["*"]}},
    ])
    send(app, client, conversation_id, "Go")
    assert [c.kind for c in calls_of(app, conversation_id)] == ["question"] and records(app) == []


def test_owner_check_and_csrf(app, client, auth, scripted_model):
    app.extensions["skills"]["records"] = records_skill([])
    auth.login_as("user")
    conversation_id = start_chat(app, client, **clerk(chat_model(scripted_model, CallingModel())))
    send(app, client, conversation_id, "delete 7")
    [call] = calls_of(app, conversation_id)
    stranger = app.test_client()
    type(auth)(app, stranger).login_as("user")

    app.config["WTF_CSRF_ENABLED"] = True
    refused = client.post(
        f"/approvals/{call.id}/decision", data={"decision": "once"}, headers={"HX-Request": "true"}
    )
    assert refused.status_code == 400 and calls_of(app, conversation_id)[0].status == "pending"

    token = re.search(r'"X-CSRFToken": "([^"]+)"', stranger.get("/chat/").text).group(1)
    response = stranger.post(
        f"/approvals/{call.id}/decision",
        data={"decision": "once"},
        headers={"HX-Request": "true", "X-CSRFToken": token},
    )
    assert response.status_code == 404 and calls_of(app, conversation_id)[0].status == "pending"

    token = re.search(r'"X-CSRFToken": "([^"]+)"', client.get(f"/chat/{conversation_id}").text).group(1)
    response = client.post(
        f"/approvals/{call.id}/decision",
        data={"decision": "once"},
        headers={"HX-Request": "true", "X-CSRFToken": token},
    )
    assert response.status_code == 200 and calls_of(app, conversation_id)[0].status == "answered"
    resumed_run(app, call.id)


def test_approval_records_outlive_the_chat_and_the_user(app, client, auth, scripted_model):
    app.extensions["skills"]["records"] = records_skill([])
    user_id = auth.login_as("user")
    conversation_id = start_chat(app, client, **clerk(chat_model(scripted_model, CallingModel())))
    send(app, client, conversation_id, "delete 7")
    [call] = calls_of(app, conversation_id)
    client.post(f"/approvals/{call.id}/decision", data={"decision": "deny", "reason": "No."})
    resumed_run(app, call.id)

    assert client.post(f"/chat/{conversation_id}/delete").status_code == 302
    assert calls_of(app, conversation_id) == []  # the cards were conversation content
    [record] = records(app)
    assert (record.conversation_id, record.tool_name, record.arguments, record.status) == (
        conversation_id,
        "delete_record",
        '{"record_id": 7}',
        "denied",
    )

    with app.app_context():
        email = db.session.get(User, user_id).email
        delete_user(db.session.get(User, user_id))
        db.session.commit()
    [record] = records(app)
    assert (record.user_id, record.decided_by_id, record.conversation_id) == (None, None, None)
    assert (record.requested_by, record.decided_by, record.reason) == (email, email, "No.")

    auth.login_as("admin")
    audit = client.get("/approvals/audit")
    assert audit.status_code == 200 and "delete_record" in audit.text and email in audit.text
    auth.logout()
    auth.login_as("user")
    assert client.get("/approvals/audit").status_code == 403
