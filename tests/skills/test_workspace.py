"""The workspace skill in real runs (FunctionModel): saved state after each tool, refusals inside the tools,
reuse by exact name, asking before changing, sample data only when asked, per-table row tools."""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall

from app.extensions import db
from app.models import Agent, Trigger
from app.tables.records import page_of_rows, select_rows
from app.tables.schema import get_table
from tests.chat_driver import outcome, send, start_chat
from tests.tables.factory import make_table

CONTACT_FIELDS = [{"name": "name", "kind": "text", "required": True}, {"name": "email", "kind": "text"}]


class Script:
    """Make the given tool calls in turn (a name may be a function of the offered tool names), then answer."""

    def __init__(self, *calls) -> None:
        self.calls = list(calls)
        self.tools: list[list[str]] = []
        self.returns: list = []

    def respond(self, messages, info) -> ModelResponse:
        if info.output_tools and not info.allow_text_output:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Scripted"})])
        names = [tool.name for tool in info.function_tools]
        self.tools.append(names)
        self.returns.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart))
        if self.calls:
            name, args = self.calls.pop(0)
            name = name(names) if callable(name) else name
            return ModelResponse(parts=[ToolCallPart(name, args, f"call-{len(self.tools)}")])
        return ModelResponse(parts=[TextPart("Done.")])

    async def stream(self, messages, info):
        for part in self.respond(messages, info).parts:
            if isinstance(part, TextPart):
                yield part.content
            else:
                yield {0: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                        tool_call_id=part.tool_call_id)}


def row_tool(verb: str):
    return lambda names: next(n for n in names if n.startswith(f"{verb}_rows_in_table_"))


def run(app, client, scripted_model, script: Script, text: str = "Go", **settings):
    model_id = scripted_model(function=script.respond, stream_function=script.stream)
    conversation_id = start_chat(app, client, skills=[{"name": "workspace", "config": settings}],
                                 model_config_id=model_id)
    return outcome(app, send(app, client, conversation_id, text))


def result(step: dict) -> dict | str:
    text = step["result"]
    try:
        return json.loads(text)
    except ValueError:
        return text


def rows_of(app, name: str) -> list[dict]:
    with app.app_context():
        definition = get_table(name)
        return page_of_rows(definition, select_rows(definition), 1, 100).items


def field_names(app, name: str) -> list[str]:
    with app.app_context():
        return [f.name for f in get_table(name).fields]


def test_an_admin_creates_a_table_and_its_rows_through_the_loaded_row_tools(app, client, auth, scripted_model):
    auth.login_as("admin")
    script = Script(("create_table", {"label": "Contacts", "fields": CONTACT_FIELDS}),
                    (row_tool("create"), {"rows": [{"name": "Ada", "email": "ada@example.org"}]}),
                    (row_tool("update"), {"changes": [{"id": 1, "values": {"email": "ada@x.org"}}]}),
                    (row_tool("delete"), {"ids": [1, 7]}))
    run_, message = run(app, client, scripted_model, script, "create a table Contacts with name and email")

    assert run_.status == "succeeded", run_.error
    created = result(message.steps[0])
    assert created["changed"] and created["created"] and created["name"] == "contacts"
    assert field_names(app, "contacts") == ["name", "email"]
    assert result(message.steps[1])["created_row_ids"] == [1]
    assert result(message.steps[2])["updated_row_ids"] == [1]
    deleted = result(message.steps[3])
    assert deleted["deleted_row_ids"] == [1] and deleted["not_found"] == [7]
    assert rows_of(app, "contacts") == []
    # Before the table existed there were no row tools; after create_table they are offered.
    assert not any("rows_in_table" in n for n in script.tools[0])
    assert {f"create_rows_in_table_{created['id']}", f"delete_rows_in_table_{created['id']}"} <= set(script.tools[1])


def test_a_user_without_admin_role_is_refused_inside_the_tool(app, client, auth, scripted_model):
    auth.login_as("user", name="Mallory")
    script = Script(("create_table", {"label": "Contacts", "fields": CONTACT_FIELDS}),
                    ("create_agent", {"name": "Spy"}), ("create_trigger", {"settings": {"name": "t"}}))
    run_, message = run(app, client, scripted_model, script)

    assert [step["failed"] for step in message.steps] == [True, True, True]
    assert json.loads(message.steps[0]["result"])["error"].startswith(
        "Refused: Mallory (role user) may not create tables")
    with app.app_context():
        assert get_table("contacts") is None
        assert db.session.scalar(db.select(Agent).where(Agent.name == "Spy")) is None


def test_row_writes_follow_the_tables_permissions(app, client, auth, scripted_model):
    with app.app_context():
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
    auth.login_as("user", name="Mallory")
    script = Script(("describe_table", {"table": "orders"}),
                    (row_tool("create"), {"rows": [{"customer": "Mallory"}]}))
    run_, message = run(app, client, scripted_model, script)
    assert message.steps[1]["failed"]
    assert "may not add rows to the table Orders" in json.loads(message.steps[1]["result"])["error"]
    assert rows_of(app, "orders") == []


def test_creating_an_existing_table_reuses_it_and_asks_before_changing(app, client, auth, scripted_model):
    with app.app_context():
        make_table("contacts", [("name", "Name", "text", True, None), ("email", "Email", "integer", False, None)])
    auth.login_as("admin")
    fields = [*CONTACT_FIELDS, {"name": "phone", "kind": "text"}]
    script = Script(("create_table", {"label": "Contacts", "fields": fields}))
    run_, message = run(app, client, scripted_model, script)

    reused = result(message.steps[0])
    assert reused["changed"] is False and reused["reused"] is True and reused["name"] == "contacts"
    assert "field phone (text) is missing from the existing table" in reused["differences"]
    assert "field email is integer, the request says text" in reused["differences"]
    assert "ask" in reused["next_steps"] and "confirm=true" in reused["next_steps"]
    assert field_names(app, "contacts") == ["name", "email"]  # nothing silently changed

    confirmed = Script(("create_table", {"label": "Contacts", "fields": fields, "confirm": True}))
    run_, message = run(app, client, scripted_model, confirmed)
    applied = result(message.steps[0])
    assert applied["changed"] and applied["added_fields"] == ["phone"]
    assert "field email stays integer (a field's kind cannot be changed)" in applied["unapplied"]
    assert field_names(app, "contacts") == ["name", "email", "phone"]


def test_an_identical_request_is_a_verified_no_op(app, client, auth, scripted_model):
    with app.app_context():
        make_table("contacts", [("name", "Name", "text", True, None), ("email", "Email", "text", False, None)],
                   label="Contacts")
    auth.login_as("admin")
    run_, message = run(app, client, scripted_model,
                        Script(("create_table", {"label": "Contacts", "fields": CONTACT_FIELDS})))
    same = result(message.steps[0])
    assert same["changed"] is False and "differences" not in same and "as requested" in same["summary"]


def test_no_sample_data_without_the_users_example_demo_or_sample(app, client, auth, scripted_model):
    auth.login_as("admin")
    call = ("create_table", {"label": "Contacts", "fields": CONTACT_FIELDS, "sample_data": True,
                             "sample_rows": [{"name": "Ada"}, {"name": "Grace"}]})
    run_, message = run(app, client, scripted_model, Script(call), "make me a contacts table")
    refused = result(message.steps[0])
    assert refused["changed"] is False and "do not invent records" in refused["summary"]
    with app.app_context():
        assert get_table("contacts") is None

    run_, message = run(app, client, scripted_model, Script(call), "make me a demo contacts table")
    assert result(message.steps[0])["sample_row_ids"] == [1, 2]
    assert [r["name"] for r in rows_of(app, "contacts")] == ["Ada", "Grace"]


def test_listing_finds_no_table_and_says_to_ask_not_create(app, client, auth, scripted_model):
    auth.login_as("admin")
    run_, message = run(app, client, scripted_model, Script(("list_tables", {"search": "invoices"})))
    listed = result(message.steps[0])
    assert listed["tables"] == [] and "Create nothing yet" in listed["summary"]


def test_builder_updates_refuse_unsupported_properties_keep_invalid_values_and_report_partial(
    app, client, auth, scripted_model
):
    with app.app_context():
        make_table("contacts", [("name", "Name", "text", True, None)], label="Contacts")
    auth.login_as("admin")
    script = Script(
        ("update_table", {"table": "contacts", "changes": {"label": "People", "colour": "red"}}),
        ("update_table", {"table": "contacts", "changes": {
            "label": "", "description": "Everyone", "add_fields": [{"name": "email"}, {"name": "name"}]}}),
    )
    run_, message = run(app, client, scripted_model, script)

    first = script.returns[0]
    assert isinstance(first, RetryPromptPart) or first.outcome == "retried"
    assert "colour cannot be updated" in str(first.content)
    second = result(message.steps[1])
    assert second["partial"] is True
    assert second["applied"] == ["description", "add field email"]
    assert "kept the existing value" in second["not_applied"]["label"]
    assert "already has a field named 'name'" in second["not_applied"]["add field name"]
    with app.app_context():
        definition = get_table("contacts")
        assert (definition.label, definition.description) == ("Contacts", "Everyone")
        assert [f.name for f in definition.fields] == ["name", "email"]


def test_row_tools_are_rebuilt_when_the_schema_changes_and_the_totals_survive(app, client, auth, scripted_model):
    auth.login_as("admin")
    script = Script(
        ("create_table", {"label": "Contacts", "fields": [{"name": "name"}]}),
        (row_tool("create"), {"rows": [{"name": "Ada"}]}),
        ("update_table", {"table": "contacts", "changes": {"add_fields": [{"name": "email"}]}}),
        (row_tool("create"), {"rows": [{"name": "Grace", "email": "g@example.org"}]}),
        (row_tool("create"), {"rows": [{"name": "Alan"}]}),
    )
    run_, message = run(app, client, scripted_model, script, max_created_rows=2)

    assert run_.status == "succeeded", run_.error
    assert result(message.steps[3])["created_row_ids"] == [2]  # the rebuilt tool knows the new field
    capped = script.returns[-1]
    assert "at most 2 rows per table" in str(capped.content) and "2 were created already" in str(capped.content)
    assert [(r["name"], r["email"]) for r in rows_of(app, "contacts")] == [("Ada", None), ("Grace", "g@example.org")]
    assert len([n for n in script.tools[3] if n.startswith("create_rows_in_table_")]) == 1  # replaced by name


def test_agents_and_triggers_are_created_reused_and_updated(app, client, auth, scripted_model):
    with app.app_context():
        make_table("contacts", [("name", "Name", "text", True, None)])
    admin_id = auth.login_as("admin", email="boss@example.org")
    script = Script(
        ("create_agent", {"name": "Greeter", "instructions": "Greet.", "skills": [{"name": "clock"}]}),
        ("create_agent", {"name": "Greeter", "instructions": "Shout."}),
        ("update_agent", {"agent": "Greeter", "changes": {"description": "Says hi", "max_requests": 999}}),
        ("create_trigger", {"settings": {"name": "Welcome", "kind": "event", "table": "contacts",
                                         "events": ["insert"], "agent": "Greeter", "run_as": "boss@example.org",
                                         "prompt": "Greet {{ row.name }}"}}),
        ("update_trigger", {"trigger": "Welcome", "changes": {"active": False, "owner": "me"}}),
        ("update_trigger", {"trigger": "Welcome", "changes": {"active": False}}),
    )
    run_, message = run(app, client, scripted_model, script)

    assert run_.status == "succeeded", run_.error
    assert result(message.steps[0])["created"] is True
    again = result(message.steps[1])
    assert again["changed"] is False and any(d.startswith("instructions") for d in again["differences"])
    updated = result(message.steps[2])
    assert updated["applied"] == ["description"] and "max_requests" in updated["not_applied"]
    assert result(message.steps[3])["created"] is True
    assert "owner cannot be updated" in str(script.returns[4].content)
    assert result(message.steps[5])["applied"] == ["active"]
    with app.app_context():
        agent = db.session.scalar(db.select(Agent).where(Agent.name == "Greeter"))
        assert (agent.instructions, agent.description, agent.max_requests) == ("Greet.", "Says hi", 25)
        assert [s["name"] for s in agent.skills] == ["clock"]
        trigger = db.session.scalar(db.select(Trigger).where(Trigger.name == "Welcome"))
        assert (trigger.agent_id, trigger.run_as_id, trigger.events, trigger.active) == (
            agent.id, admin_id, ["insert"], False)


def test_the_workspace_area_registers_the_services_the_skill_declares(app):
    import inspect

    from app.runtime.services import service_of
    from app.skills.workspace import Workspace

    services = service_of(app, "workspace")
    assert isinstance(services, Workspace), "app/workspace/__init__.py init_app must register WorkspaceServices"
    declared = [name for name, member in vars(Workspace).items() if inspect.isfunction(member) and name[0] != "_"]
    for name in declared:
        wanted = list(inspect.signature(getattr(Workspace, name)).parameters)[1:]
        given = list(inspect.signature(getattr(services, name)).parameters)
        assert given == wanted, f"WorkspaceServices.{name} takes {given}; the skill's Workspace declares {wanted}"
