"""The sidebar reaches every chat: scrolling it loads the older ones, and without JavaScript an "Older chats"
link pages through them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import Browser, Page, expect

from app.extensions import db
from app.models import Conversation
from app.models.base import utcnow
from tests.browser.pages import sign_in
from tests.conftest import make_agent, make_user

pytestmark = pytest.mark.browser

CHATS = 65  # two full pages of 30 and five more


@pytest.fixture
def many_chats(app) -> str:
    """A user with 65 chats, "Chat 64" the newest; returns their e-mail."""
    with app.app_context():
        user = make_user("user", email="max@example.org")
        agent_id = make_agent("Librarian").id
        start = utcnow() - timedelta(days=1)
        db.session.add_all([Conversation(user_id=user.id, agent_id=agent_id, title=f"Chat {n}",
                                         updated_at=start + timedelta(minutes=n)) for n in range(CHATS)])
        db.session.commit()
        return user.email


def test_scrolling_the_sidebar_loads_every_older_chat(page: Page, live_server, many_chats):
    sign_in(page, live_server.url, many_chats)
    items = page.locator("#conversation-list .conversation-item")
    expect(items).to_have_count(30)
    sidebar = page.locator("#sidebar")
    for shown in (60, CHATS):
        sidebar.hover()
        page.mouse.wheel(0, 10_000)  # the sidebar scrolls, not the window
        expect(items).to_have_count(shown)
    expect(items.last.locator(".title")).to_have_text("Chat 0")
    expect(page.get_by_role("link", name="Older chats")).to_have_count(0)


def test_without_javascript_older_chats_is_a_link_to_the_next_page(browser: Browser, live_server, many_chats):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    sign_in(page, live_server.url, many_chats)
    titles = page.locator("#conversation-list .conversation-item .title")
    expect(titles).to_have_count(30)
    expect(titles.first).to_have_text("Chat 64")
    page.get_by_role("link", name="Older chats").click()
    expect(titles).to_have_count(30)
    expect(titles.first).to_have_text("Chat 34")
    page.get_by_role("link", name="Older chats").click()
    expect(titles).to_have_text([f"Chat {n}" for n in range(4, -1, -1)])
    expect(page.get_by_role("link", name="Older chats")).to_have_count(0)
    page.get_by_role("link", name="Newer chats").click()
    expect(titles.first).to_have_text("Chat 34")
    context.close()
