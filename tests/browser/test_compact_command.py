"""Compaction in real Chromium: `/compact keep every invoice number` shows the notice, and the transcript
still shows the first message."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.extensions import db
from app.models import Conversation, Run
from app.runtime import execution
from tests.browser.pages import send, sign_in
from tests.conftest import make_agent, make_user

pytestmark = pytest.mark.browser

FIRST = "Please book invoice INV-2026-001 for order #4471 and send the PDF invoice-4471.pdf to the customer."


def test_compact_command_shows_the_notice_and_keeps_the_transcript(page: Page, app, live_server):
    with app.app_context():
        make_user("user", name="Ivy", email="ivy@example.org")
        make_agent("Bookkeeper", skills=[{"name": "compaction", "config": {
            "compact_above": 100_000, "keep_recent_messages": 100, "keep_recent_tool_results": 50,
            "minimum_worth_clearing": 0, "allow_compact": True, "show_notice": True}}])
    sign_in(page, live_server.url, "ivy@example.org")
    page.get_by_role("button", name=re.compile(r"Chat with Bookkeeper")).click()
    expect(page).to_have_url(re.compile(r"/chat/\d+$"))

    # Long enough that a summary is shorter than what it replaces (a compaction that is not is a failure).
    terms = " The customer asked for delivery before the end of the month, payment within thirty days." * 3
    texts = (FIRST, "Also invoice INV-2026-002 for order #4472, due on 2026-12-15." + terms,
             "And INV-2026-003 for order #4473." + terms)
    for count, text in enumerate(texts, start=1):
        send(page, text)
        # The answer has streamed in and replaced the live placeholder.
        expect(page.locator("article.message.assistant:not(.live)")).to_have_count(count)
        with app.app_context():
            for run_id in db.session.scalars(db.select(Run.id)):
                execution.wait(run_id)

    send(page, "/compact keep every invoice number")

    notice = page.locator("article.message.notice").last
    expect(notice).to_contain_text("The conversation was shortened for the model")
    # The transcript is untouched: the first message is still there, word for word, after a reload too.
    page.reload()
    expect(page.locator("article.message.user").first).to_have_text(FIRST)
    expect(page.locator("article.message.notice")).to_have_count(1)
    with app.app_context():
        context = db.session.scalar(db.select(Conversation.model_context))
    assert "INV-2026-001" in context and "INV-2026-003" in context
