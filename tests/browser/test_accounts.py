"""Accounts in Chromium: the first admin, sign out and in, a wrong password, a user kept from admin pages."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.pages import sign_in, submit_sign_in

pytestmark = pytest.mark.browser

ADMIN_PASSWORD = "first admin password"
USER_PASSWORD = "new user password"


def sign_out(page: Page) -> None:
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_first_admin_then_a_user_without_admin_pages(page: Page, live_server):
    url = live_server.url
    # A fresh install opens on the first-run page; no default account exists.
    page.goto(url)
    expect(page).to_have_url(f"{url}/setup")
    expect(page.get_by_role("heading", name="Welcome to Skilldesk")).to_be_visible()
    page.get_by_label("Name").fill("Ada Admin")
    page.get_by_label("E-mail").fill("ada@example.org")
    page.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
    page.get_by_label("Repeat password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Create the admin account").click()
    expect(page.get_by_text("Welcome to Skilldesk. You are its first admin.")).to_be_visible()
    expect(page.get_by_test_id("current-user")).to_contain_text("Ada Admin")
    expect(page.get_by_test_id("current-user")).to_contain_text("admin")
    assert page.goto(f"{url}/setup").status == 404  # the first-run page is gone

    page.goto(f"{url}/chat/")
    sign_out(page)
    expect(page.get_by_text("You are signed out.")).to_be_visible()

    submit_sign_in(page, url, "ada@example.org", "not the password")
    expect(page.get_by_text("Wrong e-mail or password.")).to_be_visible()
    expect(page.get_by_label("Password", exact=True)).to_have_attribute("aria-invalid", "true")

    sign_in(page, url, "ada@example.org", ADMIN_PASSWORD)
    expect(page).to_have_url(re.compile(r"/chat/$"))

    # The admin creates a user.
    page.get_by_role("link", name="Users").click()
    form = page.locator("#new-user-form")
    form.get_by_label("Name").fill("Bo User")
    form.get_by_label("E-mail").fill("bo@example.org")
    form.get_by_label("Password").fill(USER_PASSWORD)
    form.get_by_label("Role").select_option("user")
    form.get_by_role("button", name="Create user").click()
    expect(page.get_by_text("Created bo@example.org (user).")).to_be_visible()
    expect(page.locator("#users")).to_contain_text("bo@example.org")
    sign_out(page)

    # That user signs in and gets 403 on admin pages, and sees no admin links.
    sign_in(page, url, "bo@example.org", USER_PASSWORD)
    expect(page.get_by_test_id("current-user")).to_contain_text("Bo User")
    expect(page.get_by_role("link", name="Users")).to_have_count(0)
    for path in ("/admin/users", "/admin/agents/", "/admin/models/"):
        response = page.goto(f"{url}{path}")
        assert response.status == 403, path
        expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()


def test_keyboard_focus_is_visible_and_themes_switch(page: Page, app, live_server):
    with app.app_context():
        from tests.conftest import PASSWORD, make_user

        make_user("user", email="kai@example.org")
    page.goto(f"{live_server.url}/login")
    page.keyboard.press("Tab")  # the first stop is the skip link, shown when focused
    focused = page.locator(":focus")
    expect(focused).to_have_text("Skip to content")
    expect(focused).to_be_visible()
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"

    sign_in(page, live_server.url, "kai@example.org", PASSWORD)
    background = "getComputedStyle(document.body).backgroundColor"
    page.emulate_media(color_scheme="light")
    light = page.evaluate(background)
    page.emulate_media(color_scheme="dark")  # the system's dark mode applies by itself
    dark = page.evaluate(background)
    assert light != dark
    page.get_by_role("button", name="Switch light and dark theme").click()  # the toggle overrides it
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    assert page.evaluate(background) == light
    page.reload()  # and is remembered
    assert page.evaluate(background) == light
