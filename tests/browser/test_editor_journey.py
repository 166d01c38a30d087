"""The agent editor in real Chromium: an admin composes an agent of two JavaScript functions, tries it in the
preview, saves it and chats with it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.pages import send, sign_in
from tests.conftest import make_user

pytestmark = pytest.mark.browser

FUNCTIONS = [
    ("double_number", "Double a number.", '[{"name": "number", "type": "number"}]', "return number * 2;"),
    ("shout_text", "Shout a text in capitals.", '[{"name": "text", "type": "string"}]',
     'return text.toUpperCase() + "!";'),
]


def add_javascript_function(page: Page, index: int, name: str, description: str, arguments: str,
                            code: str) -> None:
    """Add a JavaScript function skill and fill in its settings, as an admin does."""
    page.get_by_label("Skill to add").select_option(label="JavaScript function")
    page.get_by_role("button", name="Add skill").click()
    skill = page.locator(f"#skill-{index}")
    skill.get_by_label("Tool name").fill(name)
    skill.get_by_label("Description").fill(description)
    skill.get_by_label("Arguments").fill(arguments)
    skill.get_by_label("Code").fill(code)


def test_two_javascript_functions_keep_their_names_in_the_preview_and_the_chat(page: Page, app, live_server):
    with app.app_context():
        make_user("admin", name="Ada Admin", email="ada@example.org")
    url = live_server.url
    sign_in(page, url, "ada@example.org")
    page.goto(f"{url}/admin/agents/new")
    page.get_by_label("Name", exact=True).fill("Calculator")
    for index, function in enumerate(FUNCTIONS):
        add_javascript_function(page, index, *function)

    page.get_by_label("Message").fill("hello")
    page.get_by_role("button", name="Try it").click()
    expect(page.locator("#preview-result")).to_contain_text("Tools available: double_number, shout_text.")

    page.get_by_role("button", name="Save agent").click()
    expect(page.get_by_text("Saved the agent Calculator.")).to_be_visible()
    expect(page.locator("#skill-0").get_by_label("Tool name")).to_have_value("double_number")
    expect(page.locator("#skill-1").get_by_label("Tool name")).to_have_value("shout_text")

    page.goto(f"{url}/chat/")
    page.get_by_role("button", name="Chat with Calculator").click()
    expect(page).to_have_url(re.compile(r"/chat/\d+$"))
    send(page, "Double the number 21")
    answer = page.locator("article.message.assistant").last
    expect(answer.locator("details.step")).to_contain_text("double_number")
    expect(answer.locator(".bubble.answer")).to_contain_text("double_number returned: 42")
    send(page, 'Shout the text "quiet please"')
    answer = page.locator("article.message.assistant").nth(1)
    expect(answer.locator("details.step")).to_contain_text("shout_text")
    expect(answer.locator(".bubble.answer")).to_contain_text("QUIET PLEASE!")
