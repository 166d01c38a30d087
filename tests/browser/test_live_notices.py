"""What a run changes beside its answer shows live: in one turn the context overflows and is compacted, and
the agent hands the conversation over. Both notices and the new agent's name in the header arrive through
the stream, in the order a reload shows them, once each, a reload during the run included."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest
from playwright.sync_api import Page, expect
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo

from app.extensions import db
from app.models import Conversation
from app.runtime.offline import SUMMARY_MARKER, extractive_summary
from tests.browser.pages import send, sign_in
from tests.conftest import make_agent, make_user
from tests.skill_chat import streamed

pytestmark = pytest.mark.browser

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 25
ANSWER = ["Billing ", "will ", "take ", "it ", "from ", "here, ", "one ", "moment ", "please."]


def long_past() -> str:
    """A model context of 30 record lookups, each result ~2 KB: worth compacting."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Audit the records of ACME.")])]
    for n in range(30):
        messages += [ModelResponse(parts=[ToolCallPart("fetch_record", {"n": n}, f"old-{n}")]),
                     ModelRequest(parts=[ToolReturnPart("fetch_record", f"Record REC-{n:04d}. {FILLER}", f"old-{n}")]),
                     ModelResponse(parts=[TextPart(f"Record {n} is fine.")])]
    return ModelMessagesTypeAdapter.dump_json(messages).decode()


class FrontDesk:
    """The first request overflows the context window; the retry hands over; then a slow short answer."""

    def __init__(self) -> None:
        self.requests = 0
        self.release = threading.Event()  # the answer's last words wait for the test (its reload mid-run)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.instructions and SUMMARY_MARKER in info.instructions:
            return ModelResponse(parts=[TextPart(extractive_summary(messages[-1].parts[0].content))])
        if info.output_tools and not info.allow_text_output:  # the title job
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Invoice question"})])
        self.requests += 1
        if self.requests == 1:
            raise ModelContextWindowExceededError("scripted", "context_length_exceeded")
        if any(isinstance(part, ToolReturnPart) for part in messages[-1].parts):
            return ModelResponse(parts=[TextPart("".join(ANSWER))])
        return ModelResponse(parts=[ToolCallPart("hand_over_to_billing", {"reason": "An invoice question."},
                                                 "handover-1")])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo):
        response = self.respond(messages, info)
        if isinstance(response.parts[0], TextPart) and response.parts[0].content == "".join(ANSWER):
            for n, word in enumerate(ANSWER):
                if n == 2:  # the run goes on only once the test has reloaded the page mid-run
                    while not self.release.is_set():
                        await asyncio.sleep(0.05)
                yield word
            return
        async for chunk in streamed(response):
            yield chunk


def test_notices_and_the_header_arrive_live_and_once(page: Page, app, live_server, scripted_model):
    script = FrontDesk()
    with app.app_context():
        user = make_user("user", name="Nia", email="nia@example.org")
        billing = make_agent("Billing")
        front = make_agent("Front desk", model_config_id=scripted_model(function=script.respond,
                                                                        stream_function=script.stream),
                           skills=[{"name": "compaction", "config": {"compact_above": 100_000,
                                                                     "keep_recent_tool_results": 500,
                                                                     "keep_recent_messages": 800}},
                                   {"name": "subagent", "config": {"agent": billing.name, "mode": "handover",
                                                                   "tool_name": "hand_over_to_billing"}}])
        conversation = Conversation(user_id=user.id, agent_id=front.id, title="Invoices",
                                    model_context=long_past())
        db.session.add(conversation)
        db.session.commit()
        chat_url = f"{live_server.url}/chat/{conversation.id}"
        front_name, billing_name = front.name, billing.name
    sign_in(page, live_server.url, "nia@example.org")
    page.goto(chat_url)
    expect(page.locator(".chat-head .agent-name")).to_have_text(front_name)

    send(page, "Why is my invoice wrong?")
    notices = page.locator("#transcript article.message.notice")
    handover = f"{front_name} handed the conversation over to {billing_name}."
    # While the answer still streams: the hand-over notice and the new agent's name, without a reload.
    expect(notices).to_have_text([handover])
    expect(page.locator(".chat-head .agent-name")).to_have_text(billing_name)
    expect(page.locator("article.message.assistant.live .bubble.streaming")).to_contain_text("Billing will")

    page.reload()  # during the run: the notice is shown once, and the run goes on
    expect(page.locator("article.message.assistant.live")).to_have_count(1)
    expect(notices).to_have_text([handover])
    script.release.set()
    answer = page.locator("#transcript article.message.assistant:not(.live)")
    expect(answer).to_contain_text("one moment please.", timeout=10_000)
    # The overflow's compaction notice arrives with the end of the run, before the answer, as stored.
    expect(notices).to_have_text([handover, re.compile(r"The conversation was shortened for the model")])
    order = page.locator("#transcript article.message").evaluate_all("items => items.map(i => i.className)")
    assert [name.split()[1] for name in order] == ["user", "notice", "notice", "assistant"]

    page.reload()
    expect(notices).to_have_text([handover, re.compile(r"The conversation was shortened for the model")])
    expect(page.locator(".chat-head .agent-name")).to_have_text(billing_name)


def test_the_notice_of_a_compaction_after_the_reply_arrives_without_a_reload(page: Page, app, live_server):
    with app.app_context():
        user = make_user("user", name="Nia", email="nia@example.org")
        agent = make_agent("Clerk", skills=[{"name": "compaction", "config": {
            "compact_above": 1_000, "keep_recent_messages": 200, "keep_recent_tool_results": 100}}])
        conversation = Conversation(user_id=user.id, agent_id=agent.id, title="Invoices")
        db.session.add(conversation)
        db.session.commit()
        chat_url = f"{live_server.url}/chat/{conversation.id}"
    sign_in(page, live_server.url, "nia@example.org")
    page.goto(chat_url)
    notices = page.locator("#transcript article.message.notice")
    answers = page.locator("#transcript article.message.assistant:not(.live)")
    for n in range(1, 4):
        send(page, f"Please file invoice INV-{n} for order {n}0 and note the delivery date of the month. " * 20)
        expect(answers).to_have_count(n, timeout=15_000)
    # The job after a reply shortened the context: its notice shows after that answer, as a reload shows it.
    expect(notices.first).to_contain_text("The conversation was shortened for the model", timeout=25_000)
    placed = "el => [el.id, el.previousElementSibling.id]"
    live = notices.first.evaluate(placed)
    page.reload()
    expect(notices.first).to_be_visible()
    assert notices.first.evaluate(placed) == live
