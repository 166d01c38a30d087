"""The receipt of a turn, written by the server from the ledger: under the answer in the chat, in the Markdown and
JSON exports, in the JSON API's metadata and as an AG-UI CUSTOM event; and failures said in Skilldesk's words."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import EventType
from pydantic_ai import ModelRetry
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.toolsets import FunctionToolset

from app.guards.credentials import MissingSecret
from app.runtime import failures, receipt
from tests.assistance.test_agui_stream import check_order, parse
from tests.chat_driver import outcome, send, start_chat
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted

CREATE = [("create_table", {"label": "Contacts", "fields": [{"name": "email", "kind": "text"}]})]
WORKSPACE = [{"name": "workspace", "config": {}}]


@pytest.fixture
def admin(auth):
    return auth.login_as("admin")


def agent(app, scripted_model, script, skills=WORKSPACE) -> int:
    with app.app_context():
        return make_agent(skills=skills, model_config_id=scripted(scripted_model, script)).id


def test_a_turn_that_changed_something_shows_its_receipt_everywhere(app, client, admin, scripted_model):
    conversation_id = start_chat(app, client, agent(app, scripted_model, Script(CREATE, "Done: Contacts exists.")))
    run, message = outcome(app, send(app, client, conversation_id, "Create a table Contacts"))
    found = message.meta["receipt"]
    assert [entry["summary"] for entry in found["changed"]] == ["created table Contacts (0 rows)"]
    assert found["changed"][0]["ref"] == {"table": "contacts"} and found["unchanged"] == []
    page = client.get(f"/chat/{conversation_id}").text
    assert 'data-testid="receipt"' in page and "Changed in this turn: created table Contacts (0 rows)" in page
    assert 'href="/data/contacts"' in page
    markdown = client.get(f"/chat/{conversation_id}/export.md").text
    assert "> **Receipt.** Changed in this turn: created table Contacts (0 rows)" in markdown
    exported = json.loads(client.get(f"/chat/{conversation_id}/export.json").text)
    assert exported["messages"][-1]["meta"]["receipt"] == found
    api = client.get(f"/api/conversations/{conversation_id}/messages").json["data"]
    assert api[-1]["metadata"]["receipt"] == found


def test_the_agui_stream_sends_the_receipt_before_the_run_finishes(app, client, admin, scripted_model):
    agent_id = agent(app, scripted_model, Script(CREATE, "Created Contacts."))
    thread = client.post("/api/conversations", data=json.dumps({"agentId": agent_id}),
                         content_type="application/json").json["data"]["id"]
    events = parse(client.post("/api/agent", data=json.dumps({"threadId": thread, "message": "Create Contacts"}),
                               content_type="application/json"))
    check_order(events)
    custom = [e for e in events if e.type == EventType.CUSTOM]
    assert [e.name for e in custom] == ["skilldesk.receipt"] and events.index(custom[0]) == len(events) - 2
    assert custom[0].value["changed"][0]["summary"] == "created table Contacts (0 rows)"


def test_a_claim_with_no_change_gets_a_receipt_that_says_nothing_changed(app, client, admin, scripted_model):
    conversation_id = start_chat(app, client, agent(app, scripted_model, Script("I have created the table."), []))
    _run, message = outcome(app, send(app, client, conversation_id, "Create a table"))
    assert message.content == "I have created the table."  # no reviewer on this agent: the answer stands
    assert receipt.headline(message.meta["receipt"]) == receipt.NOTHING
    assert receipt.NOTHING in client.get(f"/chat/{conversation_id}").text


def test_a_plain_answer_has_no_receipt(app, client, admin, scripted_model):
    conversation_id = start_chat(app, client, agent(app, scripted_model, Script("Hello."), []))
    _run, message = outcome(app, send(app, client, conversation_id, "Hi"))
    assert "receipt" not in message.meta


def test_a_failed_change_is_listed_as_not_changed(app, client, admin, scripted_model):
    rows = [("create_rows_in_table_999", {"rows": [{"email": "a@b.c"}]})]
    script = Script(CREATE, rows, "Done.")
    conversation_id = start_chat(app, client, agent(app, scripted_model, script))
    _run, message = outcome(app, send(app, client, conversation_id, "Create Contacts and add a row"))
    assert [e["summary"] for e in message.meta["receipt"]["changed"]] == ["created table Contacts (0 rows)"]


# Failures in Skilldesk's words.

def _always_retry(config, ctx) -> FunctionToolset:
    toolset = FunctionToolset()

    @toolset.tool_plain
    def lookup(what: str) -> str:
        """Look something up."""
        raise ModelRetry("try again")

    return toolset


def test_a_tool_the_model_keeps_getting_wrong_is_reported_in_skilldesks_words(app, client, admin, scripted_model):
    from pydantic import BaseModel

    from app.runtime.skill import Skill

    class NoConfig(BaseModel):
        pass

    app.extensions["skills"]["always_retry"] = Skill("always_retry", "Always retry", NoConfig, _always_retry)
    try:
        script = Script(*[[("lookup", {"what": "x"})]] * 3, "I could not look it up.")
        conversation_id = start_chat(app, client, agent(app, scripted_model, script,
                                                        [{"name": "always_retry", "config": {}}]))
        _run, message = outcome(app, send(app, client, conversation_id, "Look it up"))
    finally:
        app.extensions["skills"].pop("always_retry")
    page = client.get(f"/chat/{conversation_id}").text
    for shown in (json.dumps(message.steps), page):
        assert "pydantic.dev" not in shown and "exceeded max retries" not in shown
    assert failures.TOOL_RETRIES in message.steps[-1]["result"]


def test_a_run_that_fails_in_a_library_is_told_in_skilldesks_words_with_the_detail_for_admins():
    said, detail = failures.describe(UnexpectedModelBehavior(
        "Exceeded maximum output retries (1). See https://pydantic.dev/docs/ai/output"))
    assert said == failures.MODEL_MISBEHAVED and "pydantic.dev" in detail
    said, detail = failures.describe(ExceptionGroup("task group", [MissingSecret("Save it on the Credentials page.")]))
    assert (said, detail) == ("Save it on the Credentials page.", None)
    said, detail = failures.describe(KeyError("choices"))
    assert said == failures.UNEXPECTED and detail == "KeyError: 'choices'"
