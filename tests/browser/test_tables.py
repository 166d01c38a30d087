"""Data tables in real Chromium: an admin imports a CSV with two bad rows (listed, fixed, imported) and sets
permissions; a user filters the list, switches to cards (still cards after signing in again), and edits a
record, seeing the validation error beside the field first."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.pages import sign_in
from tests.conftest import make_user

pytestmark = pytest.mark.browser

# Line 3 has an amount that is not a number; line 6 a status that is not one of the choices.
BAD_CSV = """Customer,Amount,Status,Due
Ada,12.50,open,2026-01-05
Ken,lots,open,2026-02-01
Grace,7,closed,2026-02-10
Linus,0.99,open,2026-03-01
Dennis,3.5,pending,2026-04-01
Barbara,20,closed,2026-05-01
"""
FIXED_CSV = BAD_CSV.replace("Ken,lots,", "Ken,40,").replace("3.5,pending,", "3.5,open,")


def sign_out(page: Page) -> None:
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("You are signed out.")).to_be_visible()


def dismiss_alerts(page: Page) -> None:
    """Close the flashed messages, as a person would: they float over the top right of the page."""
    for button in page.locator("#alerts").get_by_role("button", name="Dismiss").all():
        button.click()


def test_admin_imports_a_csv_and_a_user_browses_and_edits(page: Page, app, live_server, tmp_path):
    live_server.app.config["IMPORTS_PATH"] = str(tmp_path / "imports")
    with app.app_context():
        make_user("admin", name="Ada Admin", email="ada@example.org")
        make_user("user", name="Uma User", email="uma@example.org")
    url = live_server.url
    bad_file, fixed_file = tmp_path / "orders.csv", tmp_path / "orders-fixed.csv"
    bad_file.write_text(BAD_CSV)
    fixed_file.write_text(FIXED_CSV)

    # The admin creates the table and a choice field, then imports the rest of the columns from a file.
    sign_in(page, url, "ada@example.org")
    page.get_by_role("link", name="Tables").click()
    form = page.locator("#new-table-form")
    form.get_by_label("Name").fill("orders")
    form.get_by_label("Label").fill("Orders")
    form.get_by_role("button", name="Create table").click()
    expect(page).to_have_url(re.compile(r"/admin/tables/orders$"))
    expect(page.locator("#alerts")).to_contain_text("Created the table Orders.")
    field_form = page.locator("#new-field-form")
    field_form.get_by_label("Name").fill("status")
    field_form.get_by_label("Label").fill("Status")
    field_form.get_by_label("Kind").select_option(label="Choice")
    field_form.get_by_label("Choices").fill("open\nclosed")
    field_form.get_by_role("button", name="Add field").click()
    expect(page.locator("#alerts")).to_contain_text("Added the field Status.")

    page.get_by_role("link", name="Import CSV").click()
    page.get_by_label("CSV file").set_input_files(bad_file)
    page.get_by_role("button", name="Check the file").click()
    expect(page.locator("#import-summary")).to_have_text("4 rows can be imported; 2 cannot.")
    expect(page.locator("#import-columns tbody tr")).to_have_count(4)
    expect(page.get_by_label("Kind of Amount")).to_have_value("decimal")
    expect(page.get_by_label("Kind of Due")).to_have_value("date")
    bad_rows = page.locator("#bad-rows tbody tr")
    expect(bad_rows.locator("td:first-child")).to_have_text(["3", "6"])  # lines of the file
    expect(bad_rows.locator("td:last-child")).to_have_text(["Amount: 'lots' is not a number",
                                                            "Status: 'pending' is not one of the choices: "
                                                            "open, closed"])
    expect(page.get_by_role("button", name="Import 4 rows")).to_be_enabled()

    # Fixed in the file and uploaded again: every row passes, and the admin confirms.
    page.get_by_label("CSV file").set_input_files(fixed_file)
    page.get_by_role("button", name="Upload again").click()
    expect(page.locator("#import-summary")).to_have_text("6 rows can be imported.")
    expect(page.locator("#bad-rows")).to_have_count(0)
    page.get_by_role("button", name="Import 6 rows").click()
    expect(page).to_have_url(re.compile(r"/data/orders$"))
    expect(page.locator("#alerts")).to_contain_text("Imported 6 rows.")
    expect(page.locator("#records [data-testid=record]")).to_have_count(6)
    expect(page.locator("#record-count")).to_have_text("6 records")
    expect(page.locator("#record-table thead")).to_contain_text("Amount")

    # Permissions: users may read (the default) and update, nothing else.
    dismiss_alerts(page)
    page.get_by_role("link", name="Table settings").click()
    expect(page.get_by_label("Users may read")).to_be_checked()
    page.get_by_label("Users may update").check()
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#alerts")).to_contain_text("Saved the table's settings and permissions.")
    expect(page.get_by_label("Users may read")).to_be_checked()
    expect(page.get_by_label("Users may update")).to_be_checked()
    expect(page.get_by_label("Users may insert")).not_to_be_checked()
    expect(page.get_by_label("Users may delete")).not_to_be_checked()
    sign_out(page)

    # The user filters the list, then switches to cards.
    sign_in(page, url, "uma@example.org")
    page.get_by_role("link", name="Data").click()
    page.get_by_role("link", name="Orders").click()
    expect(page.locator("#records [data-testid=record]")).to_have_count(6)
    expect(page.get_by_role("link", name="New record")).to_have_count(0)  # users may not insert
    page.get_by_label("Filter").select_option(label="Status")
    page.get_by_label("Operator").select_option(label="is")
    page.get_by_label("Value").fill("open")
    page.get_by_role("button", name="Add filter").click()
    expect(page.locator("#active-filters")).to_have_text(re.compile(r"Status is open"))
    expect(page.locator("#records [data-testid=record]")).to_have_count(4)
    expect(page.locator("#record-count")).to_have_text("4 records")
    page.get_by_role("button", name="Cards").click()
    expect(page.locator("#record-cards .record-card")).to_have_count(4)  # the filter is kept
    expect(page.locator("#active-filters")).to_have_text(re.compile(r"Status is open"))
    expect(page.get_by_role("button", name="Cards")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#record-table")).to_have_count(0)

    # The layout is the user's preference: still cards after signing out and in again.
    sign_out(page)
    sign_in(page, url, "uma@example.org")
    page.goto(f"{url}/data/orders")
    expect(page.locator("#record-cards .record-card")).to_have_count(6)
    expect(page.locator("#record-table")).to_have_count(0)
    expect(page.get_by_role("button", name="Cards")).to_have_attribute("aria-pressed", "true")

    # An invalid amount is refused with 422 and the error beside the field; a valid one is saved.
    card = page.locator(".record-card", has_text="Grace")
    card.get_by_role("link").click()
    expect(page.locator("#record-title")).to_contain_text("Orders · #")
    expect(page.get_by_role("button", name="Delete record")).to_have_count(0)  # users may not delete
    amount = page.get_by_label("Amount")
    expect(amount).to_have_value("7")
    amount.fill("seven")
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        page.get_by_role("button", name="Save").click()
    assert refused.value.status == 422
    expect(page.locator("#record-errors")).to_have_text("Some fields need attention.")
    expect(page.locator("#field-amount-error")).to_have_text("'seven' is not a number.")
    expect(page.get_by_label("Amount")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Amount")).to_have_value("seven")  # what was typed is kept

    page.get_by_label("Amount").fill("7.25")
    with page.expect_response(lambda r: r.request.method == "POST") as saved:
        page.get_by_role("button", name="Save").click()
    assert saved.value.status == 200
    expect(page.locator("#record-saved")).to_have_text("Saved.")
    expect(page.locator("#field-amount-error")).to_have_count(0)
    page.reload()
    expect(page.get_by_label("Amount")).to_have_value("7.25")
    page.goto(f"{url}/data/orders?q=Grace")
    expect(page.locator(".record-card [data-field=amount]")).to_have_text("7.25")
