"""Evaluations in real Chromium: an admin runs a level-1 dataset on an agent from its page, follows the run,
opens the failing case and reads its transcript and tool steps."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LiveServer
from tests.browser.pages import sign_in
from tests.conftest import make_agent, make_user
from tests.evals.test_runner import DATASET

pytestmark = pytest.mark.browser


@pytest.fixture
def evals_server(app, settings, tmp_path):
    (tmp_path / "sample.yaml").write_text(DATASET)
    server = LiveServer({**settings, "WTF_CSRF_ENABLED": True, "JOBS_IMMEDIATE": True, "EVALS_PATH": str(tmp_path)})
    yield server
    server.stop()


def test_an_admin_runs_a_dataset_and_reads_the_failing_case(page: Page, app, evals_server):
    with app.app_context():
        make_user("admin", name="Ada Admin", email="ada@example.org")
        agent_id = make_agent("Evaluated", skills=[{"name": "workspace", "config": {}}]).id
    url = evals_server.url
    sign_in(page, url, "ada@example.org")
    page.goto(f"{url}/admin/agents/{agent_id}")
    panel = page.locator("#agent-evals")
    expect(panel).to_contain_text("No evaluation run yet.")
    panel.get_by_label("Dataset").select_option("sample")
    panel.get_by_role("button", name="Run evaluation").click()

    progress = page.locator("#eval-progress")
    expect(progress).to_contain_text("finished — 2 of 2 cases, 1 passed (50%)")
    expect(page.locator("dl.facts")).to_contain_text("skipped-one (waits for the knowledge skill)")
    failing = page.locator("#case-fails-on-purpose")
    expect(failing).to_contain_text("FAILED")
    expect(failing).to_contain_text("answer.no_unsupported_success")
    failing.get_by_role("link", name="fails-on-purpose").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Case fails-on-purpose — FAILED")
    expect(page.locator("#case-transcript")).to_contain_text("I have deleted everything.")
    expect(page.locator("#case-verdicts")).to_contain_text("failed: answer.contains: hello")
    page.get_by_role("link", name="Back to run").click()
    page.locator("#case-makes-a-table").get_by_role("link", name="makes-a-table").click()
    expect(page.locator("#case-steps")).to_contain_text("create_table done")
    expect(page.locator("#case-transcript .step")).to_contain_text("create_table(")

    page.goto(f"{url}/admin/agents/{agent_id}")
    expect(page.locator("#agent-last-eval")).to_contain_text("sample — finished, 1/2 passed")
