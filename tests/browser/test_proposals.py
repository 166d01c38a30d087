"""Proposals in real Chromium: accept switches the list to cards and it persists; refuse changes nothing; the switch;
and the same cards with JavaScript off.

The table's assistant (a scripted model) proposes the cards layout and wrongly claims it applied it.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect
from pydantic_ai.messages import ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall

from app.assistance import gate
from app.extensions import db
from app.models import Conversation, Message
from app.runtime import offline
from app.tables.records import insert_row
from app.tables.schema import get_table
from tests.browser.pages import sign_in
from tests.conftest import make_agent, make_user
from tests.tables.factory import make_table

pytestmark = pytest.mark.browser
RUN = 15_000


async def proposer(messages, info):
    parts = messages[-1].parts
    if any(isinstance(p, UserPromptPart) for p in parts):
        args = {"namespace": "ui", "key": "defaultListLayout", "value": '"cards"',
                "reason": "Cards are easier to read on a phone."}
        yield {0: DeltaToolCall(name="propose_preference_change", json_args=json.dumps(args), tool_call_id="p1")}
    elif any(isinstance(p, ToolReturnPart) for p in parts):
        yield "I have updated your layout to cards."


def open_orders(page: Page, app, live_server, scripted_model) -> None:
    with app.app_context():
        make_user("user", email="pat@example.org")
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
        table = get_table("orders")
        insert_row(table, {"customer": "Ada Lovelace"})
        table.assistant_agent_id = make_agent(
            "Orders helper", roles=["user"], skills=[{"name": "ui_proposals", "config": {}}],
            model_config_id=scripted_model(function=offline.respond, stream_function=proposer)).id
        db.session.commit()
    sign_in(page, live_server.url, "pat@example.org")
    page.goto(f"{live_server.url}/data/orders")
    page.wait_for_load_state("load")
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "table")
    box = page.locator("#assistant-text")
    box.fill("Make this list easier to read on my phone.")
    box.press("Enter")
    expect(page.get_by_test_id("proposal")).to_be_visible(timeout=RUN)
    expect(page.locator("#assistant .bubble.answer").last).to_contain_text("It waits for you")
    expect(page.locator("#assistant")).not_to_contain_text("I have updated")


def test_accepting_the_proposal_switches_the_list_to_cards_and_it_persists(page: Page, app, live_server,
                                                                           scripted_model, screenshot):
    open_orders(page, app, live_server, scripted_model)
    page.get_by_test_id("proposal").scroll_into_view_if_needed()
    screenshot(page, "proposal")
    page.get_by_test_id("proposal-accept").click()
    expect(page.get_by_test_id("proposal-decision")).to_have_text("Accepted.")
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "cards")
    # The toggle says what is shown, without a reload (it stayed on Table until one).
    expect(page.get_by_test_id("layout-cards")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("layout-table")).to_have_attribute("aria-pressed", "false")
    page.reload()
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "cards")


def test_refusing_the_proposal_leaves_the_list_as_it_was(page: Page, app, live_server, scripted_model):
    open_orders(page, app, live_server, scripted_model)
    page.get_by_test_id("proposal-refuse").click()
    expect(page.get_by_test_id("proposal-decision")).to_have_text("Refused.")
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "table")
    page.reload()
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "table")


def test_with_the_assistant_off_the_chat_and_the_api_answer_feature_disabled(page: Page, app, live_server):
    with app.app_context():
        make_user("user", email="pat@example.org")
    sign_in(page, live_server.url, "pat@example.org")
    with live_server.app.test_request_context():
        gate.set_assistant_enabled(False)
        db.session.commit()
    page.goto(f"{live_server.url}/chat/")
    expect(page.locator("main")).to_contain_text("The assistant is switched off")
    answer = page.request.get(f"{live_server.url}/chat/", headers={"Accept": "application/json"})
    assert answer.status == 403 and answer.json()["code"] == "FEATURE_DISABLED"
    capabilities = page.request.get(f"{live_server.url}/api/assistant/capabilities").json()
    assert capabilities["data"]["enabled"] is False


def test_without_javascript_accept_is_a_form_and_refuse_is_not_offered(browser, app, live_server):
    """The same cards with JavaScript off: Accept writes the preference (and opens a list's view); no Refuse."""
    with app.app_context():
        user = make_user("user", email="pat@example.org")
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
        insert_row(get_table("orders"), {"customer": "Ada Lovelace"})
        conversation = Conversation(user_id=user.id, agent_id=make_agent().id, title="Layout")
        db.session.add(conversation)
        db.session.flush()
        cards = {"schemaVersion": 1, "current": "table", "proposed": "cards", "reason": "Cards fit a phone."}
        db.session.add(Message(conversation_id=conversation.id, role="assistant", content="I suggest cards.",
                               meta={"status": "succeeded", "proposals": [
                                   {**cards, "id": "5f0c1c2e-8d2a-4a57-9a3e-2f4d6b1e0c11", "kind": "preference",
                                    "target": {"namespace": "ui", "key": "defaultListLayout"}},
                                   {**cards, "id": "5f0c1c2e-8d2a-4a57-9a3e-2f4d6b1e0c12", "kind": "view_state",
                                    "target": {"resource": "data/orders", "view": "layout"}}]}))
        db.session.commit()
        chat = f"{live_server.url}/chat/{conversation.id}"
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    sign_in(page, live_server.url, "pat@example.org")
    page.goto(chat)
    view, preference = page.get_by_test_id("proposal").last, page.get_by_test_id("proposal").first
    expect(preference.get_by_test_id("proposal-refuse")).to_be_hidden()
    expect(preference).to_contain_text("Not accepting it changes nothing.")
    view.get_by_test_id("proposal-accept").click()  # this page load only
    expect(page).to_have_url(re.compile(r"/data/orders\?layout=cards$"))
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "cards")
    page.goto(f"{live_server.url}/data/orders")
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "table")
    page.goto(chat)
    page.get_by_test_id("proposal").first.get_by_test_id("proposal-accept").click()
    expect(page).to_have_url(re.compile(rf"/chat/{conversation.id}#proposal-"))
    expect(page.locator("#alerts")).to_contain_text("Accepted: your preference ui.defaultListLayout is saved.")
    page.goto(f"{live_server.url}/data/orders")
    expect(page.get_by_test_id("records")).to_have_attribute("data-layout", "cards")
    context.close()
