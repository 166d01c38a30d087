"""Evaluations in real Chromium: an admin runs a level-1 dataset on an agent from its page, watches the run
in progress, then reads the finished run, opens the failing case and sees its transcript and tool steps.

The run goes through the real job queue: the server queues it on SQLite huey and a consumer thread runs
it. The second case calls a real MCP server's tool that waits for a file, so the run is held at "1 of 3
cases" until the test has seen that progress and creates the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LiveServer
from tests.browser.pages import sign_in
from tests.conftest import make_agent, make_user

pytestmark = pytest.mark.browser

GATE = Path(__file__).resolve().parents[1] / "mcp_servers" / "gate.py"


def dataset(release: Path) -> str:
    gate = {"name": "mcp", "config": {"transport": "stdio", "command": sys.executable, "args": [str(GATE)],
                                      "timeout": 120}}
    return f"""
name: progress
cases:
  - id: makes-a-table
    prompt: Create a table Contacts.
    replies:
      - calls: [{{tool: create_table, args: {{label: Contacts, fields: [{{name: email, label: Email, kind: text}}]}}}}]
      - text: Created the table Contacts.
    checks:
      tools: {{called: [create_table]}}
  - id: waits-for-the-test
    prompt: Wait until the test lets go.
    skills: [{json.dumps(gate)}]
    replies:
      - calls: [{{tool: wait_for_release, args: {{path: {json.dumps(str(release))}}}}}]
      - text: Let go.
    checks:
      tools: {{results: [{{tool: wait_for_release, contains: released}}]}}
  - id: fails-on-purpose
    prompt: Hello
    replies: [{{text: I have deleted everything.}}]
    checks: {{answer: {{no_unsupported_success: true, contains: [hello]}}}}
  - id: skipped-one
    prompt: Hello
    skip: waits for a live model
"""


@pytest.fixture
def queued_server(app, settings, tmp_path):
    """The site with its jobs on SQLite huey, run by a consumer thread (no periodic jobs) as `flask serve` does."""
    folder = tmp_path / "evals"
    folder.mkdir()
    release = tmp_path / "release"
    (folder / "progress.yaml").write_text(dataset(release))
    server = LiveServer({**settings, "WTF_CSRF_ENABLED": True, "JOBS_IMMEDIATE": False,
                         "JOBS_SQLITE_PATH": str(tmp_path / "jobs.sqlite3"), "EVALS_PATH": str(folder)})
    consumer = server.app.extensions["jobs"].huey.create_consumer(workers=1, worker_type="thread", periodic=False)
    consumer.start()
    yield server, release
    release.touch()  # a failed assertion must not leave the run waiting
    consumer.stop(graceful=True)
    server.stop()


def test_an_admin_watches_a_run_in_progress_then_reads_the_failing_case(page: Page, app, queued_server):
    server, release = queued_server
    with app.app_context():
        make_user("admin", name="Ada Admin", email="ada@example.org")
        agent_id = make_agent("Evaluated", skills=[{"name": "workspace", "config": {}}]).id
    url = server.url
    sign_in(page, url, "ada@example.org")
    page.goto(f"{url}/admin/agents/{agent_id}")
    panel = page.locator("#agent-evals")
    expect(panel).to_contain_text("No evaluation run yet.")
    panel.get_by_label("Dataset").select_option("progress")
    panel.get_by_role("button", name="Run evaluation").click()

    # The run is in progress: its first case is done, the second waits for the test.
    progress = page.locator("#eval-progress")
    expect(progress).to_contain_text("running — 1 of 3 cases, 1 passed (100%)", timeout=60_000)
    expect(page.locator("#case-makes-a-table")).to_contain_text("passed")
    expect(page.locator("#case-fails-on-purpose")).to_have_count(0)
    release.touch()

    # The page refreshes itself until the run has finished.
    expect(progress).to_contain_text("finished — 3 of 3 cases, 2 passed (67%)", timeout=60_000)
    expect(page.locator("dl.facts")).to_contain_text("skipped-one (waits for a live model)")
    expect(page.locator("#case-waits-for-the-test")).to_contain_text("wait_for_release")
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
    expect(page.locator("#agent-last-eval")).to_contain_text("progress — finished, 2/3 passed")
