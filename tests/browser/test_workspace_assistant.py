"""The Workspace assistant in real Chromium, on the offline model: from the panel on the Data page an admin
asks for a table, sees the tool step live, finds the table, and the answer states only what was done."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.tables.schema import get_table
from tests.browser.pages import sign_in
from tests.conftest import make_user

pytestmark = pytest.mark.browser


def test_an_admin_asks_the_workspace_assistant_for_a_table(page: Page, app, live_server, screenshot):
    with app.app_context():
        make_user("admin", name="Ada Admin", email="ada@example.org")
    sign_in(page, live_server.url, "ada@example.org")
    page.get_by_role("link", name="Data").click()

    page.locator("#workspace-panel summary").click()
    panel = page.get_by_test_id("workspace-assistant")
    panel.get_by_label("Ask the Workspace assistant").fill("create a table Contacts with name and email")
    panel.get_by_test_id("workspace-assistant-send").click()

    # The tool step shows in the panel, then the checked answer.
    expect(panel.locator(".steps")).to_contain_text("create_table", timeout=15_000)
    answer = panel.locator(".bubble.answer").last
    expect(answer).to_contain_text("Created the table Contacts (contacts, id", timeout=15_000)
    expect(answer).to_contain_text("with the fields name, email")
    assert "Offline model" in answer.inner_text()
    assert not re.search(r"\b(added|inserted|updated|deleted)\b", answer.inner_text(), re.I)  # nothing else claimed
    # Under the answer, the server's receipt of what the turn changed, opening to the list with a link.
    receipt = panel.get_by_test_id("receipt").last
    expect(receipt).to_contain_text("Changed in this turn: created table Contacts (0 rows)")
    receipt.locator("summary").click()
    expect(receipt.get_by_role("link", name="open the table")).to_have_attribute("href", "/data/contacts")
    screenshot(page, "workspace-assistant")

    # The table exists, with its fields, and its list shows them.
    with app.app_context():
        assert [f.name for f in get_table("contacts").fields] == ["name", "email"]
    page.goto(f"{live_server.url}/data/contacts")
    expect(page.locator("main")).to_contain_text("Contacts")
    expect(page.locator("main table, main").first).to_contain_text("email")
