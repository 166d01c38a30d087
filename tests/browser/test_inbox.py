"""The approvals inbox in real Chromium: a webhook run starts waiting, the navigation's count shows it
without a reload, and the trigger's owner allows the call from the inbox."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from app.extensions import db
from app.models import PendingCall
from app.runtime import execution
from tests.browser.pages import sign_in
from tests.conftest import make_user
from tests.waiting.scenario import approval_agent, webhook_trigger

pytestmark = pytest.mark.browser
RUN = 30_000


def test_the_count_goes_up_live_and_the_owner_allows_the_call_from_the_inbox(page: Page, app, live_server,
                                                                            scripted_model, screenshot):
    deleted: list[int] = []
    with app.app_context():
        owner_id = make_user("admin", email="olga@example.org").id
    agent_id = approval_agent(app, scripted_model, deleted)
    live_server.app.extensions["skills"]["records"] = app.extensions["skills"]["records"]
    live_server.app.config["INBOX_POLL_SECONDS"] = 1  # the page polls every second instead of every 15
    _trigger_id, path = webhook_trigger(app, agent_id, owner_id=owner_id, name="Cleanup hook")

    sign_in(page, live_server.url, "olga@example.org")
    approvals = page.get_by_role("navigation", name="Main").get_by_role("link", name="Approvals")
    expect(approvals).to_be_visible()
    expect(page.get_by_test_id("inbox-count")).to_have_count(0)

    fired = httpx.post(f"{live_server.url}{path}", json={"record": 7}, timeout=RUN / 1000)
    assert fired.status_code == 202 and fired.json()["status"] == "waiting"
    expect(page.get_by_test_id("inbox-count")).to_have_text("1", timeout=RUN)  # no reload: the count is live

    approvals.click()
    item = page.get_by_test_id("inbox-item")
    expect(item).to_contain_text("delete_record", timeout=RUN)
    expect(item).to_contain_text("trigger Cleanup hook")
    expect(item.get_by_test_id("call-arguments")).to_contain_text("record_id")
    expect(item.get_by_test_id("expires")).to_be_visible()
    screenshot(page, "approvals-inbox")
    assert deleted == []

    item.get_by_role("button", name="Allow once").click()
    expect(item).to_contain_text("Allowed once", timeout=RUN)
    expect(page.get_by_test_id("inbox-count")).to_have_count(0, timeout=RUN)  # the count follows the decision
    expect(item.get_by_role("button", name="Allow once")).to_have_count(0)
    with app.app_context():
        resumed = db.session.scalar(db.select(PendingCall.resume_run_id))
    execution.wait(resumed)  # the run the decision resumed, in the server's process
    assert deleted == [7]
