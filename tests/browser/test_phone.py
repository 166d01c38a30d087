"""On a phone (390×844) a chat opens on its latest message with the composer in view; the list of chats
waits behind a "Chats" button, which works without JavaScript too."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Browser, Page, expect

from app.extensions import db
from app.models import Conversation, Message
from tests.browser.pages import send, sign_in
from tests.conftest import make_agent, make_user

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def two_chats(app) -> tuple[int, int]:
    """Pia's two chats: "Older one", and "Recipes" of 40 messages; returns their ids."""
    with app.app_context():
        user = make_user("user", name="Pia", email="pia@example.org")
        agent_id = make_agent("Cook").id
        older = Conversation(user_id=user.id, agent_id=agent_id, title="Older one")
        db.session.add(older)
        db.session.flush()
        recipes = Conversation(user_id=user.id, agent_id=agent_id, title="Recipes")
        db.session.add(recipes)
        db.session.flush()
        db.session.add_all([Message(conversation_id=recipes.id, role="user" if n % 2 == 0 else "assistant",
                                    content=f"Step {n} of the recipe.", meta={"status": "succeeded"})
                            for n in range(40)])
        db.session.commit()
        return older.id, recipes.id


def test_a_chat_on_a_phone_opens_at_its_end_with_the_chats_behind_a_button(browser: Browser, live_server,
                                                                           two_chats):
    older_id, recipes_id = two_chats
    page: Page = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True).new_page()
    sign_in(page, live_server.url, "pia@example.org")
    page.goto(f"{live_server.url}/chat/{recipes_id}")
    page.wait_for_load_state("load")
    if os.environ.get("SKILLDESK_SCREENSHOTS") == "1":
        page.screenshot(path="/tmp/skilldesk-phone.png")
    expect(page.get_by_text("Step 39 of the recipe.")).to_be_in_viewport()
    expect(page.locator("#composer-text")).to_be_in_viewport()
    chats = page.locator("#conversation-list")
    expect(chats).to_be_hidden()

    send(page, "And the sauce?")
    expect(page.locator("article.message.assistant:not(.live)").last).to_contain_text("Offline model")
    expect(page.locator("article.message.assistant").last).to_be_in_viewport()
    expect(page.locator("#composer-text")).to_be_in_viewport()

    page.get_by_text("☰ Chats").click()
    expect(chats).to_be_visible()
    if os.environ.get("SKILLDESK_SCREENSHOTS") == "1":
        page.screenshot(path="/tmp/skilldesk-phone-drawer.png")
    chats.get_by_role("link", name=re.compile("Older one")).click()
    expect(page).to_have_url(re.compile(rf"/chat/{older_id}$"))
    expect(page.locator("#conversation-list")).to_be_hidden()
    page.context.close()


def test_without_javascript_the_chats_button_still_opens_the_list(browser: Browser, live_server, two_chats):
    _older_id, recipes_id = two_chats
    page = browser.new_context(viewport=PHONE, java_script_enabled=False).new_page()
    sign_in(page, live_server.url, "pia@example.org")
    page.goto(f"{live_server.url}/chat/{recipes_id}")
    expect(page.locator("#composer-text")).to_be_in_viewport()
    chats = page.locator("#conversation-list")
    expect(chats).to_be_hidden()
    page.get_by_text("☰ Chats").click()
    expect(chats.get_by_role("link", name=re.compile("Older one"))).to_be_visible()
    page.context.close()
