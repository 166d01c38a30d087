"""The assistant panel: the page context is resolved on the server before the agent sees it, or dropped."""

from __future__ import annotations

import html
import json
import re

import pytest

from app.extensions import db
from app.models import Message
from app.runtime import execution, offline
from app.tables.context import resolve_page_context
from app.tables.records import insert_row, validate
from app.tables.schema import get_table
from tests.conftest import make_agent
from tests.tables.factory import make_table


@pytest.fixture
def assistant(app, scripted_model, orders):
    """Give the orders table an assistant on a scripted model that records its instructions."""
    seen: list[str] = []

    async def model(messages, info):
        seen.append(info.instructions or "")
        yield "Noted."

    config_id = scripted_model(function=offline.respond, stream_function=model)
    with app.app_context():
        agent = make_agent("Orders helper", model_config_id=config_id, instructions="You help with orders.")
        definition = get_table("orders")
        definition.assistant_agent_id = agent.id
        insert_row(definition, validate(definition, {"customer": "Ada Lovelace", "amount": "12.5"})[0])
        make_table(
            "payroll",
            [("salary", "Salary", "integer", False, None)],
            permissions={"read": [], "insert": [], "update": [], "delete": []},
        )
        insert_row(get_table("payroll"), {"salary": 99000})
        db.session.commit()
    return seen


def ask(app, client, data: dict, htmx: bool = True):
    page = {name: data.pop(name) for name in ("resource", "recordKey") if name in data}
    if page:  # what the panel sends: the page context as JSON text
        data["context"] = json.dumps({"page": page})
    response = client.post(
        "/data/orders/assistant",
        data={"text": "What is this?", **data},
        headers={"HX-Request": "true"} if htmx else {},
    )
    with app.app_context():
        run_id = db.session.scalar(
            db.select(Message.run_id).where(Message.role == "user").order_by(Message.id.desc())
        )
    if run_id:
        execution.wait(run_id)
    return response


def test_the_record_page_shows_the_panel_and_the_agent_gets_the_resolved_record(app, client, auth, assistant):
    auth.login_as("user")
    page = client.get("/data/orders/1").text
    assert 'id="assistant"' in page
    sent = re.search(r'name="context" value="([^"]*)"', page).group(1)
    assert json.loads(html.unescape(sent)) == {"page": {"resource": "data/orders", "recordKey": 1, "locale": "en"}}
    assert 'id="assistant"' in client.get("/data/orders").text

    response = ask(app, client, {"resource": "data/orders", "recordKey": "1"})
    assert response.status_code == 200
    assert response.text.strip().startswith('<section id="assistant"') and "What is this?" in response.text
    assert 'name="conversation_id"' in response.text
    [instructions] = assistant
    assert "You help with orders." in instructions
    assert "looking at the data table “Orders” (name: orders), at record 1" in instructions
    assert "- Customer (customer): Ada Lovelace" in instructions and "- Amount (amount): 12.5" in instructions
    with app.app_context():
        message = db.session.scalar(db.select(Message).where(Message.role == "user"))
        assert message.meta["extras"]["page_context"] == {"resource": "data/orders", "recordKey": 1}


@pytest.mark.parametrize(
    "context",
    [
        {"resource": "erp/orders", "recordKey": "1"},  # not ours
        {"resource": "data/payroll", "recordKey": "1"},  # exists, but the user may not read it
        {"resource": "data/orders", "recordKey": "999"},  # no such record
        {"resource": "data/orders", "recordKey": "1 OR 1=1"},
        {"resource": "data/../orders"},
        {},
    ],
)
def test_anything_that_does_not_resolve_leaves_the_assistant_generic(app, client, auth, assistant, context):
    auth.login_as("user")
    assert ask(app, client, context).status_code == 200
    [instructions] = assistant
    assert "You help with orders." in instructions
    assert "looking at" not in instructions and "99000" not in instructions


def test_the_list_page_context_names_the_table_only(app, client, auth, assistant):
    auth.login_as("user")
    ask(app, client, {"resource": "data/orders", "recordKey": ""})
    [instructions] = assistant
    assert "looking at the data table “Orders” (name: orders) — its list of records." in instructions
    assert "Ada Lovelace" not in instructions


def test_the_conversation_continues_and_only_its_owner_may_continue_it(app, client, auth, assistant):
    auth.login_as("user")
    first = ask(app, client, {"resource": "data/orders", "recordKey": "1"})
    conversation_id = int(first.text.split('name="conversation_id" value="')[1].split('"')[0])
    second = ask(app, client, {"conversation_id": conversation_id, "resource": "data/orders"})
    assert second.status_code == 200 and second.text.count('data-role="user"') == 2
    auth.logout()
    auth.login_as("user")
    assert (
        client.post(
            "/data/orders/assistant",
            data={"text": "Hi", "conversation_id": conversation_id},
            headers={"HX-Request": "true"},
        ).status_code
        == 404
    )


def test_without_javascript_the_panel_continues_in_the_chat_page(app, client, auth, assistant):
    auth.login_as("user")
    response = ask(app, client, {"resource": "data/orders", "recordKey": "1"}, htmx=False)
    assert response.status_code == 302 and "/chat/" in response.location
    assert "Noted." in client.get(response.location).text


def test_an_empty_message_is_refused_beside_the_box(app, client, auth, assistant):
    auth.login_as("user")
    response = client.post("/data/orders/assistant", data={"text": " "}, headers={"HX-Request": "true"})
    assert response.status_code == 422 and 'id="assistant-error"' in response.text


@pytest.mark.parametrize(("text", "error"), [
    (" ", "Write a message first."),
    ("x" * 20_001, "The message is too long (20,001 characters; the limit is 20,000)."),
])
def test_the_panel_refuses_a_message_in_the_composers_words(app, client, auth, assistant, text, error):
    auth.login_as("user")
    response = client.post("/data/orders/assistant", data={"text": text}, headers={"HX-Request": "true"})
    assert response.status_code == 422 and error in response.text


def test_guests_and_tables_without_an_assistant_get_no_panel(app, client, auth, assistant):
    auth.login_as("guest")
    assert 'id="assistant"' not in client.get("/data/orders/1").text
    assert client.post("/data/orders/assistant", data={"text": "Hi"}).status_code == 404


def test_resolution_rechecks_the_role(app, assistant):
    with app.app_context():
        assert resolve_page_context("user", "data/orders", 1).record["customer"] == "Ada Lovelace"
        assert resolve_page_context("user", "data/payroll", 1) is None
        assert resolve_page_context("admin", "data/payroll", 1).record["salary"] == 99000
        assert resolve_page_context(None, "data/orders", 1) is None
        assert resolve_page_context("user", "data/orders", True) is None
        assert resolve_page_context("user", {"resource": "data/orders"}) is None
