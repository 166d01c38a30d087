"""Cards that wait for the user, in real Chromium.

Approve a plan; answer questions with buttons, a list or the message box; decide on a tool call whose card
is still there after the server restarts.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect
from pydantic import BaseModel
from pydantic_ai.messages import ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall
from pydantic_ai.toolsets import FunctionToolset

from app.runtime import offline
from app.runtime.skill import Skill
from app.runtime.untrusted import unfence
from tests.browser.pages import send, sign_in
from tests.conftest import make_agent, make_user

pytestmark = pytest.mark.browser

PLAN = "1. **Back up** the orders table\n2. Delete the orders older than a year"
# Waits that include a whole run (model, tools, stored events, the stream) get room on a busy machine.
RUN = 30_000
LONG = ["Ship everything in one parcel next Monday morning", "Ship each item as soon as it is in stock"]


def last_answer(page: Page):
    """The newest assistant message."""
    return page.locator("article.message.assistant").last


def scripted(decide):
    """A streamed FunctionModel: report tool results when they come back, else call what `decide` picks."""

    async def stream(messages, info):
        parts = messages[-1].parts
        prompt = next((p.content for p in parts if isinstance(p, UserPromptPart)), None)
        returns = [p for p in parts if isinstance(p, ToolReturnPart)]
        calls = decide(prompt) if prompt else []
        if calls:
            for index, (name, args) in enumerate(calls):
                yield {index: DeltaToolCall(name=name, json_args=json.dumps(args),
                                            tool_call_id=f"{name}-{len(messages)}-{index}")}
        else:
            yield " | ".join(f"{r.tool_name}: {unfence(r.model_response_str())}" for r in returns) or "Nothing to do."

    return stream


def start(page: Page, url: str, app, scripted_model, skills: list, decide) -> None:
    with app.app_context():
        make_user("user", email="pat@example.org")
        name = make_agent("Cards", skills=skills, model_config_id=scripted_model(
            function=offline.respond, stream_function=scripted(decide))).name
    sign_in(page, url, "pat@example.org")
    page.get_by_role("button", name=f"Chat with {name}").click()
    expect(page).to_have_url(re.compile(r"/chat/\d+$"))


def test_approve_a_plan(page: Page, app, live_server, scripted_model):
    start(page, live_server.url, app, scripted_model,
          [{"name": "plan_approval", "config": {"approval_prompt": "Go ahead."}}],
          lambda prompt: [("submit_plan_for_approval", {"plan": PLAN})])
    send(page, "Clean up the old orders")
    card = page.locator("section.call-plan")
    expect(card).to_contain_text("Plan for your approval", timeout=RUN)
    expect(card.locator(".plan strong")).to_have_text("Back up", timeout=RUN)  # the plan is rendered Markdown

    card.get_by_role("button", name="Approve").click()
    expect(card).to_contain_text("Approved", timeout=RUN)
    expect(card.get_by_role("button", name="Approve")).to_have_count(0, timeout=RUN)
    answer = last_answer(page)
    expect(answer).to_contain_text("submit_plan_for_approval: approved", timeout=RUN)

    page.reload()  # single use: after a reload the card is still decided
    expect(page.locator("section.call-plan")).to_contain_text("Approved", timeout=RUN)
    approve = page.locator("section.call-plan").get_by_role("button", name="Approve")
    expect(approve).to_have_count(0, timeout=RUN)


def test_answer_questions_with_buttons_a_list_or_the_composer(page: Page, app, live_server, scripted_model):
    def decide(prompt: str):
        if "ship" in prompt:
            return [("ask_user_question", {"question": "How to ship?", "options": LONG})]
        if "paint" in prompt:
            return [("ask_user_question", {"question": "Which colour?", "options": ["Red", "Blue"]})]
        return []

    start(page, live_server.url, app, scripted_model, [{"name": "ask_user", "config": {}}], decide)
    send(page, "paint my bike")
    card = page.locator("section.call-question").last
    expect(card).to_contain_text("Which colour?", timeout=RUN)
    expect(card.get_by_role("button", name="Discuss instead")).to_be_visible(timeout=RUN)
    card.get_by_role("button", name="Blue", exact=True).click()
    expect(card).to_contain_text("Answered: Blue", timeout=RUN)
    expect(last_answer(page)).to_contain_text("ask_user_question: Blue", timeout=RUN)

    send(page, "ship my order")
    card = page.locator("section.call-question").last
    expect(card).to_contain_text("How to ship?", timeout=RUN)
    # Long labels: a list to pick from and an Answer button.
    expect(card.get_by_role("radio")).to_have_count(2, timeout=RUN)
    card.get_by_label(LONG[1]).check()
    card.get_by_role("button", name="Answer", exact=True).click()
    expect(card).to_contain_text(f"Answered: {LONG[1]}", timeout=RUN)
    expect(last_answer(page)).to_contain_text(f"ask_user_question: {LONG[1]}", timeout=RUN)

    send(page, "paint it again")
    card = page.locator("section.call-question").last
    expect(card.get_by_role("button", name="Red", exact=True)).to_be_visible(timeout=RUN)
    send(page, "Green, please")  # typing in the message box answers the question too
    expect(last_answer(page)).to_contain_text("ask_user_question: Green, please", timeout=RUN)
    expect(card).to_contain_text("Answered: Green, please", timeout=RUN)


def test_a_tool_approval_card_survives_a_restart(page: Page, app, live_server, scripted_model):
    deleted: list[int] = []

    class Settings(BaseModel):
        pass

    def build(config, ctx):
        toolset = FunctionToolset()

        @toolset.tool_plain
        def delete_record(record_id: int) -> str:
            """Delete a record."""
            deleted.append(record_id)
            return f"Record {record_id} deleted."

        return toolset

    records = Skill(name="records", title="Records", config=Settings, build=build)
    live_server.app.extensions["skills"]["records"] = records
    start(page, live_server.url, app, scripted_model,
          [{"name": "records", "config": {}}, {"name": "tool_approval", "config": {"tools": ["delete_*"]}}],
          lambda prompt: [("delete_record", {"record_id": int(n)})
                          for n in re.findall(r"delete (\d+)", prompt)])

    send(page, "delete 7")
    card = page.locator("section.call-approval").last
    expect(card).to_contain_text("Allow this tool call?", timeout=RUN)
    expect(card).to_contain_text("delete_record", timeout=RUN)
    expect(card.locator("pre.arguments")).to_contain_text('"record_id": 7', timeout=RUN)
    assert deleted == []

    live_server.restart()  # a new app on the same database and port, as after a deploy
    live_server.app.extensions["skills"]["records"] = records
    page.reload()
    card = page.locator("section.call-approval").last
    expect(card.get_by_role("button", name="Allow once")).to_be_visible(timeout=RUN)
    card.get_by_role("button", name="Allow once").click()
    expect(card).to_contain_text("Allowed once", timeout=RUN)
    expect(last_answer(page)).to_contain_text("delete_record: Record 7 deleted.", timeout=RUN)
    assert deleted == [7]

    send(page, "delete 8")
    card = page.locator("section.call-approval").last
    expect(card).to_contain_text('"record_id": 8', timeout=RUN)
    card.get_by_text("Deny…").click()
    card.get_by_label("Reason, for the agent (optional)").fill("Record 8 is still in use.")
    card.get_by_role("button", name="Deny", exact=True).click()
    expect(card).to_contain_text("Denied: “Record 8 is still in use.”", timeout=RUN)
    expect(last_answer(page)).to_contain_text(
        "The user denied this call: Record 8 is still in use.", timeout=RUN)

    send(page, "delete 9")
    page.locator("section.call-approval").last.get_by_role("button", name="Always in this chat").click()
    expect(last_answer(page)).to_contain_text("Record 9 deleted.", timeout=RUN)
    send(page, "delete 10")  # allowed in this chat: no card this time
    expect(last_answer(page)).to_contain_text("Record 10 deleted.", timeout=RUN)
    expect(page.locator("section.call-approval")).to_have_count(3, timeout=RUN)
    assert deleted == [7, 9, 10]
