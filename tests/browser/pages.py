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
