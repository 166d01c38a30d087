"""The browser's console stays clean on the main pages: no error and no Content-Security-Policy violation
while an admin chats (a streamed answer from a composer they made taller, a rename), edits an agent,
browses a table and one of its records, and lists the links they shared."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import ConsoleMessage, Locator, Page, expect

from app.extensions import db
from app.models import Agent
from app.tables import records, schema
from tests.browser.pages import send, sign_in
from tests.conftest import make_user

pytestmark = pytest.mark.browser


def drag_taller(page: Page, textarea: Locator) -> None:
    """Drag a text area's resize handle down, as a person does (the browser sets its height inline)."""
    box = textarea.bounding_box()
    right, bottom = box["x"] + box["width"] - 3, box["y"] + box["height"] - 3
    page.mouse.move(right, bottom)
    page.mouse.down()
    page.mouse.move(right, bottom + 60, steps=5)
    page.mouse.up()
    assert "height" in (textarea.get_attribute("style") or "")


def test_the_main_pages_log_no_errors(page: Page, app, live_server):
    with app.app_context():
        admin = make_user("admin", name="Ada Admin", email="ada@example.org")
        definition = schema.create_table("orders", "Orders")
        schema.add_field(definition, "customer", "Customer", "text", required=True)
        definition.permissions = {"read": ["admin"], "insert": ["admin"], "update": ["admin"], "delete": []}
        db.session.commit()
        row_id = records.insert_row(definition, {"customer": "Grace"}, admin.id)
        db.session.commit()
        demo_id = db.session.scalar(db.select(Agent.id).where(Agent.name == "Demo assistant"))
    problems: list[str] = []

    def collect(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            problems.append(f"{page.url}: {message.type}: {message.text} ({message.location})")

    page.on("console", collect)
    page.on("pageerror", lambda error: problems.append(f"{page.url}: uncaught {error}"))
    url = live_server.url
    sign_in(page, url, "ada@example.org")

    page.get_by_role("button", name="Chat with Demo assistant").click()
    expect(page).to_have_url(re.compile(r"/chat/\d+$"))
    page.wait_for_load_state("load")
    drag_taller(page, page.locator("#composer-text"))  # a long question ahead: the composer is made taller
    send(page, "What is the current time?")
    expect(page.locator("article.message.assistant:not(.live) .bubble.answer")).to_contain_text(
        "Here is what the tools returned")
    expect(page.locator(".conversation-item .title").first).to_have_text("What is the current time",
                                                                         timeout=15_000)
    page.get_by_text("Rename", exact=True).click()
    page.locator("#rename-title").fill("Clock check")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#chat-title h1")).to_have_text("Clock check")
    page.get_by_role("button", name="Share").click()
    page.locator("#share-dialog").get_by_role("button", name="Create link").click()
    expect(page.locator("#share-link")).to_have_value(re.compile(r"/s/[\w-]{40,}$"))

    page.goto(f"{url}/admin/agents/{demo_id}")
    page.get_by_label("Message").fill("What is the current time?")
    page.get_by_role("button", name="Try it").click()
    expect(page.locator("#preview-result")).to_contain_text("Here is what the tools returned")

    page.goto(f"{url}/data/orders")
    expect(page.get_by_text("Grace")).to_be_visible()
    page.goto(f"{url}/data/orders/{row_id}")
    expect(page.get_by_label("Customer")).to_have_value("Grace")
    page.goto(f"{url}/shares")
    expect(page.get_by_text("Clock check")).to_be_visible()
    page.wait_for_load_state("load")

    assert problems == []
