"""Steps the browser tests share, taken as people take them."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.conftest import PASSWORD


def sign_in(page: Page, url: str, email: str) -> None:
    """Sign in with the test password through the form; the chat list opens."""
    page.goto(f"{url}/login")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/chat/$"))


def send(page: Page, text: str) -> None:
    """Type a message and press Enter, as people do, once the page's scripts have loaded.

    A page reached by a click or a redirect may still be loading them; Enter before then adds a line.
    """
    page.wait_for_load_state("load")
    composer = page.locator("#composer-text")
    composer.fill(text)
    composer.press("Enter")
