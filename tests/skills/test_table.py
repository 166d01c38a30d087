"""The table skill in real runs: query, insert, update, with the user's permissions checked in the tools."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall

from app.extensions import db
from app.models import User
from app.skills.table import Config
from app.tables.records import get_row, insert_row, page_of_rows, select_rows, validate
from app.tables.schema import get_table
from tests.chat_driver import outcome, send, start_chat
from tests.tables.factory import make_table

USERS_MAY_READ = {"read": ["user"], "insert": [], "update": [], "delete": []}
USERS_MAY_WRITE = {"read": ["user"], "insert": ["user"], "update": ["user"], "delete": []}


class Script:
    """A scripted model: make the given tool calls in turn, then answer with what the tools returned."""

    def __init__(self, *calls: tuple[str, dict]) -> None:
        self.calls = list(calls)
        self.requests: list[list] = []
        self.tools: list[str] = []

    def respond(self, messages, info) -> ModelResponse:
        if info.output_tools and not info.allow_text_output:  # the title job
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Scripted"})])
        self.requests.append(list(messages))
        self.tools = [tool.name for tool in info.function_tools]
        if self.calls:
            name, args = self.calls.pop(0)
            return ModelResponse(parts=[ToolCallPart(name, args, f"call-{len(self.requests)}")])
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returned) or "Done")])

    async def stream(self, messages, info):
        for part in self.respond(messages, info).parts:
            if isinstance(part, TextPart):
                yield part.content
            else:
                yield {
                    0: DeltaToolCall(
                        name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id=part.tool_call_id
                    )
                }


def said(step: dict) -> str:
    """Return what a tool step returned; a failed result is stored as {"error": "..."}."""
    return json.loads(step["result"])["error"] if step["failed"] else step["result"]


def run_with(app, client, scripted_model, script: Script, text: str = "Go", **settings):
    model_id = scripted_model(function=script.respond, stream_function=script.stream)
    skill = {"name": "table", "config": {"tables": ["orders"], **settings}}
    conversation_id = start_chat(app, client, skills=[skill], model_config_id=model_id)
    return outcome(app, send(app, client, conversation_id, text))


def rows(app) -> list[dict]:
    with app.app_context():
        definition = get_table("orders")
        return page_of_rows(definition, select_rows(definition), 1, 100).items


def seed(app, permissions: dict, *customers: str) -> None:
    with app.app_context():
        make_table(permissions=permissions)
        definition = get_table("orders")
        for n, customer in enumerate(customers, start=1):
            insert_row(
                definition,
                validate(
                    definition,
                    {"customer": customer, "amount": str(n * 10), "status": "open" if n % 2 else "closed"},
                )[0],
            )


def test_a_user_without_insert_permission_cannot_insert_through_the_tool(app, client, auth, scripted_model):
    seed(app, USERS_MAY_READ)
    auth.login_as("user", name="Mallory")
    script = Script(("insert_orders", {"values": {"customer": "Mallory", "amount": "1"}}))
    run, message = run_with(app, client, scripted_model, script, allow_insert=True)

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["name"] == "insert_orders" and step["failed"]  # a refusal is a failed step, like any error
    assert said(step).startswith("Refused: Mallory (role user) may not insert rows into the table Orders")
    assert "insert permission" in said(step)
    assert rows(app) == []


def test_a_query_on_a_field_that_does_not_exist_gets_a_retry_naming_the_real_fields(
    app, client, auth, scripted_model
):
    seed(app, USERS_MAY_READ, "Ada")
    auth.login_as("user")
    script = Script(("query_orders", {"conditions": [{"field": "colour", "op": "=", "value": "red"}]}))
    run, message = run_with(app, client, scripted_model, script)

    assert run.status == "succeeded", run.error
    # A ModelRetry: the model is asked to try again, with the reason.
    [retry] = [p for p in script.requests[1][-1].parts if isinstance(p, ToolReturnPart)]
    assert retry.outcome == "retried" and retry.retry.cause == "model_retry"
    assert "no field 'colour'" in str(retry.content)
    assert (
        "its fields are: id, customer, amount, status, due, paid, qty, notes, created_at, updated_at"
        in str(retry.content)
    )
    assert message.steps[0]["failed"]


def test_a_query_matches_any_field_filters_and_shows_a_small_table(app, client, auth, scripted_model):
    seed(app, USERS_MAY_READ, "Ada", "Grace", "Alan", "Linus")
    auth.login_as("user")
    script = Script(
        ("query_orders", {"match": "a", "conditions": [{"field": "status", "value": "open"}], "limit": 5})
    )
    run, message = run_with(app, client, scripted_model, script)
    result = message.steps[0]["result"]
    assert result.startswith("2 of 2 matching rows of Orders:")
    assert "| id | customer | amount | status |" in result
    assert "| 1 | Ada | 10 | open |" in result and "| 3 | Alan | 30 | open |" in result
    assert "Grace" not in result
    # The answer quoting the result is rendered as a table in the chat.
    assert "<table>" in client.get(f"/chat/{run.conversation_id}").text


def test_the_limit_is_capped_by_the_settings(app, client, auth, scripted_model):
    seed(app, USERS_MAY_READ, *[f"C{n}" for n in range(8)])
    auth.login_as("user")
    run, message = run_with(app, client, scripted_model, Script(("query_orders", {"limit": 50})), max_rows=3)
    assert message.steps[0]["result"].startswith("3 of 8 matching rows")


def test_inserts_and_updates_with_permission_are_validated_and_stored(app, client, auth, scripted_model):
    seed(app, USERS_MAY_WRITE, "Ada")
    user_id = auth.login_as("user")
    script = Script(
        ("insert_orders", {"values": {"customer": "Grace", "amount": "lots"}}),
        ("insert_orders", {"values": {"customer": "Grace", "amount": "7.5", "status": "open"}}),
        ("update_orders", {"id": 1, "values": {"status": "closed"}}),
        ("update_orders", {"id": 99, "values": {"status": "closed"}}),
    )
    run, message = run_with(app, client, scripted_model, script, allow_insert=True, allow_update=True)

    assert run.status == "succeeded", run.error
    results = [step["result"] for step in message.steps]
    assert "Fix these values: amount: 'lots' is not a number" in results[0]
    assert results[1].startswith("Inserted row 2 into Orders:") and "| 2 | Grace | 7.5 | open |" in results[1]
    assert results[2].startswith("Updated row 1 of Orders:") and "closed" in results[2]
    assert "There is no row 99" in results[3]
    assert [(r["customer"], r["status"]) for r in rows(app)] == [("Ada", "closed"), ("Grace", "open")]
    assert {"query_orders", "insert_orders", "update_orders"} <= set(script.tools)
    with app.app_context():
        assert db.session.get(User, user_id) is not None


def test_insert_and_update_tools_exist_only_when_enabled(app, client, auth, scripted_model):
    seed(app, USERS_MAY_WRITE)
    auth.login_as("user")
    script = Script()
    run_with(app, client, scripted_model, script)
    assert script.tools == ["query_orders"]


def test_the_role_is_read_again_when_the_tool_runs(app, client, auth, scripted_model):
    seed(app, USERS_MAY_WRITE)
    user_id = auth.login_as("user")

    class Demoting(Script):
        def respond(self, messages, info):
            if len(self.requests) == 0 and not info.output_tools:
                with app.app_context():
                    db.session.get(User, user_id).role = "guest"
                    db.session.commit()
            return super().respond(messages, info)

    script = Demoting(("update_orders", {"id": 1, "values": {"status": "open"}}))
    run, message = run_with(app, client, scripted_model, script, allow_update=True)
    assert said(message.steps[0]).startswith("Refused:") and "(role guest)" in said(message.steps[0])
    assert message.steps[0]["failed"]


def test_an_unreadable_table_is_refused_for_queries(app, client, auth, scripted_model):
    seed(app, {"read": [], "insert": [], "update": [], "delete": []}, "Secret")
    auth.login_as("user")
    run, message = run_with(app, client, scripted_model, Script(("query_orders", {})))
    assert said(message.steps[0]).startswith("Refused:") and "Secret" not in said(message.steps[0])
    assert message.steps[0]["failed"]


def test_the_offline_model_finds_the_query_tool_and_reports_the_rows(app, client, auth):
    seed(app, USERS_MAY_READ, "Ada")
    auth.login_as("user")
    skill = {"name": "table", "config": {"tables": ["orders"]}}
    conversation_id = start_chat(app, client, skills=[skill])
    run, message = outcome(app, send(app, client, conversation_id, "Query the orders of 'Ada'"))
    assert run.status == "succeeded", run.error
    assert message.steps[0]["name"] == "query_orders"
    assert "(Offline model)" in message.content and "| 1 | Ada |" in message.content


def test_a_table_that_was_deleted_gives_no_tools(app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script()
    run, _message = run_with(app, client, scripted_model, script)
    assert run.status == "succeeded" and script.tools == []


def test_inserts_by_an_agent_fire_the_tables_triggers(app, client, auth, scripted_model):
    from app.models import Run, Trigger
    from tests.conftest import make_agent

    seed(app, USERS_MAY_WRITE)
    user_id = auth.login_as("user")
    with app.app_context():
        clerk = make_agent("Clerk")
        db.session.add(
            Trigger(
                name="On order",
                kind="event",
                table_id=get_table("orders").id,
                events=["insert"],
                agent_id=clerk.id,
                run_as_id=user_id,
                prompt="Order {{ row.id }}",
            )
        )
        db.session.commit()
    script = Script(("insert_orders", {"values": {"customer": "Ada"}}))
    run, _message = run_with(app, client, scripted_model, script, allow_insert=True)
    assert run.status == "succeeded"
    with app.app_context():
        fired = db.session.scalar(db.select(Run).where(Run.trigger == "table"))
        assert fired is not None and fired.prompt == "Order 1" and fired.status == "succeeded"
        assert get_row(get_table("orders"), 1)["customer"] == "Ada"


@pytest.mark.parametrize("tables", [["Orders"], ["dt orders"], ["a;drop"]])
def test_settings_refuse_names_that_are_not_table_names(tables):
    with pytest.raises(ValidationError):
        Config(tables=tables)
    assert Config(tables=["orders", " orders ", ""]).tables == ["orders"]
