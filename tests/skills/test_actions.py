"""The Action-as-tool skill: webhook, agent and table-insert actions with an admin's schema, in real runs."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from sqlalchemy import select

from app.extensions import db
from app.skills.actions import Config
from app.tables import schema
from tests.conftest import make_agent
from tests.local_http import QuietHandler, serving
from tests.skill_chat import chat_with, streamed

TICKET_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 3}, "priority": {"type": "integer", "minimum": 1,
                                                                           "maximum": 5}},
    "required": ["title"],
    "additionalProperties": False,
}


class Script:
    """A scripted model: call one tool with fixed arguments, then answer with what it returned."""

    def __init__(self, tool: str | None = None, args: dict | None = None, answer: str = "Done") -> None:
        self.tool, self.args, self.answer = tool, args or {}, answer
        self.requests: list[tuple[list, list]] = []

    def respond(self, messages, info) -> ModelResponse:
        if info.output_tools and not info.allow_text_output:  # the title job
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Action chat"})])
        self.requests.append((list(messages), list(info.function_tools)))
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        if self.tool is None or returned:
            said = " | ".join(str(part.content) for part in returned)
            return ModelResponse(parts=[TextPart(f"{self.answer}: {said}" if said else self.answer)])
        return ModelResponse(parts=[ToolCallPart(self.tool, self.args, "call-1")])

    def stream(self, messages, info):
        return streamed(self.respond(messages, info))


def agent_with(app, scripted_model, script: Script, skills: list | None = None, roles: list | None = None,
               name: str = "Actor") -> tuple[int, str]:
    model_id = scripted_model(function=script.respond, stream_function=script.stream)
    with app.app_context():
        agent = make_agent(name, skills=skills, model_config_id=model_id, roles=roles)
        return agent.id, agent.name


def action(**settings) -> dict:
    return {"name": "actions", "config": settings}


@pytest.fixture
def webhook():
    """A local HTTP endpoint that records what it receives and answers 201 with JSON."""
    received: list[dict] = []

    class Handler(QuietHandler):
        def do_POST(self):  # noqa: N802 (the http.server spelling)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
            self.reply(json.dumps({"ticket": 42, "status": "open"}).encode(), "application/json", status=201)

    with serving(Handler) as server:
        yield f"http://127.0.0.1:{server.server_port}/tickets", received


def ticket_action(url: str, **extra) -> dict:
    return action(tool_name="create_ticket", description="Open a support ticket for the user.",
                  kind="webhook", parameters=TICKET_SCHEMA, url=url, **extra)


def test_a_webhook_action_is_a_tool_with_the_admins_schema_and_calls_the_url(
        app, client, auth, scripted_model, webhook, monkeypatch):
    url, received = webhook
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    monkeypatch.setenv("TICKETS_KEY", "k-123")
    script = Script("create_ticket", {"title": "Printer on fire", "priority": 2}, answer="Opened")
    agent_id, _ = agent_with(app, scripted_model, script,
                             skills=[ticket_action(url, headers=["X-Api-Key: {env:TICKETS_KEY}"])])
    auth.login_as("user")

    run, message = chat_with(app, client, agent_id, "The printer is on fire")

    assert run.status == "succeeded", run.error
    [tool] = script.requests[0][1]
    assert (tool.name, tool.description, tool.parameters_json_schema) == \
        ("create_ticket", "Open a support ticket for the user.", TICKET_SCHEMA)
    [request] = received
    assert request["body"] == {"title": "Printer on fire", "priority": 2}
    assert request["headers"]["X-Api-Key"] == "k-123"
    [step] = message.steps
    assert not step["failed"] and step["result"].startswith("The webhook answered 201.")
    assert '"ticket": 42' in step["result"]


def test_arguments_that_break_the_schema_are_sent_back_to_the_model_not_to_the_webhook(
        app, client, auth, scripted_model, webhook):
    url, received = webhook
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    script = Script("create_ticket", {"priority": 9, "colour": "red"})
    agent_id, _ = agent_with(app, scripted_model, script, skills=[ticket_action(url)])
    auth.login_as("user")

    run, message = chat_with(app, client, agent_id, "Open a ticket")

    assert received == []
    [step] = message.steps
    assert step["failed"] and "do not match the tool's schema" in step["result"]
    assert "'title' is a required property" in step["result"] and "priority: 9 is greater" in step["result"]


def test_a_webhook_on_a_refused_address_is_not_called(app, client, auth, scripted_model, webhook):
    url, received = webhook
    script = Script("create_ticket", {"title": "Printer on fire"})
    agent_id, _ = agent_with(app, scripted_model, script, skills=[ticket_action(url)])
    auth.login_as("user")

    run, message = chat_with(app, client, agent_id, "Open a ticket")

    assert received == []
    assert message.steps[0]["failed"] and "OUTBOUND_ALLOWED_HOSTS" in message.steps[0]["result"]


def test_an_agent_action_asks_the_agent_with_the_arguments_in_its_prompt(app, client, auth, scripted_model):
    writer = Script(answer="Poem")
    _writer_id, writer_name = agent_with(app, scripted_model, writer, name="Writer")
    script = Script("write_poem", {"topic": "cats"}, answer="Here")
    agent_id, _ = agent_with(app, scripted_model, script, skills=[action(
        tool_name="write_poem", description="Write a poem.", kind="agent", agent=writer_name,
        prompt="Write a short poem about {{ arguments.topic }}.",
        parameters={"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]})])
    auth.login_as("user")

    run, message = chat_with(app, client, agent_id, "A poem please")

    assert run.status == "succeeded"
    assert writer.requests[0][0][0].parts[-1].content == "Write a short poem about cats."
    assert message.steps[0]["result"] == "Poem"
    assert run.requests == 3  # two of the caller, one of the agent it asked


def test_an_agent_action_to_an_agent_the_user_may_not_use_is_refused(app, client, auth, scripted_model):
    writer = Script(answer="Poem")
    _writer_id, writer_name = agent_with(app, scripted_model, writer, name="Writer", roles=["admin"])
    script = Script("write_poem", {})
    agent_id, _ = agent_with(app, scripted_model, script, skills=[action(
        tool_name="write_poem", description="Write a poem.", kind="agent", agent=writer_name)])
    auth.login_as("user")

    run, message = chat_with(app, client, agent_id, "A poem please")

    assert writer.requests == []
    assert message.steps[0]["failed"] and "may not use the agent" in message.steps[0]["result"]


def make_table(app, name: str, insert_roles: list[str]) -> None:
    with app.app_context():
        definition = schema.create_table(name, name.title())
        schema.add_field(definition, "title", "Title", "text", required=True)
        schema.add_field(definition, "priority", "Priority", "integer")
        definition.permissions = {"read": ["user"], "insert": insert_roles, "update": [], "delete": []}
        db.session.commit()


def rows_of(app, name: str) -> list[dict]:
    with app.app_context():
        table = schema.sql_table(schema.get_table(name))
        return [dict(row) for row in db.session.execute(select(table.c.title, table.c.priority)).mappings()]


def test_a_table_insert_action_adds_the_row_when_the_users_role_may_insert(app, client, auth, scripted_model):
    make_table(app, "tickets", ["user"])
    script = Script("add_ticket", {"title": "Broken chair", "priority": 3})
    agent_id, _ = agent_with(app, scripted_model, script, skills=[action(
        tool_name="add_ticket", description="Record a ticket.", kind="table_insert", table="tickets",
        parameters=TICKET_SCHEMA)])
    auth.login_as("user")

    run, message = chat_with(app, client, agent_id, "My chair is broken")

    assert run.status == "succeeded", run.error
    assert rows_of(app, "tickets") == [{"title": "Broken chair", "priority": 3}]
    assert message.steps[0]["result"].startswith("Inserted row 1 into the table Tickets")


def test_a_table_insert_action_is_refused_when_the_role_may_not_insert(app, client, auth, scripted_model):
    make_table(app, "audits", [])
    script = Script("add_audit", {"title": "Sneaky row"})
    agent_id, _ = agent_with(app, scripted_model, script, skills=[action(
        tool_name="add_audit", description="Record an audit.", kind="table_insert", table="audits",
        parameters=TICKET_SCHEMA)])
    auth.login_as("user")

    run, message = chat_with(app, client, agent_id, "Add an audit row")

    assert rows_of(app, "audits") == []
    assert message.steps[0]["failed"] and "may not add rows" in message.steps[0]["result"]


def test_settings_are_checked():
    base = {"tool_name": "create_ticket", "description": "Open a ticket."}
    assert Config(**base, url="https://tickets.example.org/new").parameters["type"] == "object"
    with pytest.raises(ValidationError, match="starting with http"):
        Config(**base)
    with pytest.raises(ValidationError, match="Not a valid JSON schema"):
        Config(**base, url="https://x.org", parameters={"type": "objekt"})
    with pytest.raises(ValidationError, match="must describe an object"):
        Config(**base, url="https://x.org", parameters={"type": "string"})
    with pytest.raises(ValidationError, match="Name the agent"):
        Config(**base, kind="agent")
    with pytest.raises(ValidationError, match="Template error"):
        Config(**base, kind="agent", agent="Writer", prompt="{{ broken")
    with pytest.raises(ValidationError, match="Name the data table"):
        Config(**base, kind="table_insert")
    with pytest.raises(ValidationError, match="Start with a letter"):
        Config(**{**base, "tool_name": "bad name"}, url="https://x.org")
