"""Steps the browser tests share, taken as people take them."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.conftest import PASSWORD


def submit_sign_in(page: Page, url: str, email: str, password: str = PASSWORD) -> None:
    """Fill in the sign-in form and submit it."""
    page.goto(f"{url}/login")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()


def sign_in(page: Page, url: str, email: str, password: str = PASSWORD) -> None:
    """Sign in through the form; the chat list opens, its styles and scripts loaded."""
    submit_sign_in(page, url, email, password)
    expect(page).to_have_url(re.compile(r"/chat/$"))
    page.wait_for_load_state("load")


def send(page: Page, text: str) -> None:
    """Type a message and press Enter, as people do, once the page's scripts have loaded.

    A page reached by a click or a redirect may still be loading them; Enter before then adds a line.
    """
    page.wait_for_load_state("load")
    composer = page.locator("#composer-text")
    composer.fill(text)
    composer.press("Enter")
