"""Chatting in real Chromium: a streamed answer with a tool step, reload during a run, Stop, rename, search,
delete, sharing with a named user who continues a copy while a third user gets 404, a long chat that
shows its earlier messages on demand, and a streamed answer the output guardrails refuse."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest
from playwright.sync_api import Browser, Page, expect

from app.extensions import db
from app.guards.credentials import save_credential
from app.models import Agent, Conversation, Message
from app.runtime import offline
from app.runtime.guardrails import REFUSAL
from tests.browser.pages import send, sign_in
from tests.conftest import make_agent, make_user

pytestmark = pytest.mark.browser

STORY = [f"word{n} " for n in range(40)] + ["The end."]


@pytest.fixture
def slow_agent(app, scripted_model) -> str:
    """An agent whose model streams a 41-word story, one word every 60 ms."""

    async def story(messages, info):
        for word in STORY:
            await asyncio.sleep(0.06)
            yield word

    with app.app_context():
        return make_agent("Storyteller", model_config_id=scripted_model(function=offline.respond,
                                                                        stream_function=story)).name


def test_chat_with_a_tool_step_then_rename_search_and_delete(page: Page, app, live_server, screenshot):
    with app.app_context():
        make_user("user", name="Uma User", email="uma@example.org")
    url = live_server.url
    sign_in(page, url, "uma@example.org")
    page.get_by_role("button", name="Chat with Demo assistant").click()
    expect(page).to_have_url(re.compile(r"/chat/\d+$"))

    send(page, "What is the current time?")
    step = page.locator("details.step").first
    expect(step).to_contain_text("current_time")
    expect(step.locator(".step-state")).to_have_text("done")
    answer = page.locator("article.message.assistant .bubble.answer").last
    expect(answer).to_contain_text("Here is what the tools returned")
    expect(answer).to_contain_text("current_time")
    expect(page.locator("#composer-text")).to_be_empty()
    # The title arrives in the sidebar and the heading without a reload (the page polls with a backoff).
    title = "What is the current time"
    expect(page.locator(".conversation-item .title").first).to_have_text(title, timeout=15_000)
    expect(page.locator("#chat-title h1")).to_have_text(title)
    step.locator("summary").click()  # open the tool step, as a reader would
    expect(step.get_by_text("Result")).to_be_visible()
    screenshot(page, "chat")

    page.get_by_text("Rename", exact=True).click()
    page.locator("#rename-title").fill("Clock check")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#chat-title h1")).to_have_text("Clock check")
    expect(page.locator(".conversation-item .title").first).to_have_text("Clock check")

    search = page.get_by_label("Search chats")
    search.fill("zebra")
    expect(page.locator("#conversation-list")).to_contain_text("No chat matches your search.")
    search.fill("clock")
    expect(page.locator(".conversation-item")).to_have_count(1)
    search.fill("tools returned")  # message text is searched too
    expect(page.locator(".conversation-item .title")).to_have_text(["Clock check"])

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_text("More", exact=True).click()
    page.get_by_role("button", name="Delete chat").click()
    expect(page).to_have_url(re.compile(r"/chat/$"))
    expect(page.get_by_text("Chat deleted.")).to_be_visible()
    expect(page.locator(".conversation-item")).to_have_count(0)


def test_reload_during_a_run_then_stop_a_run(page: Page, app, live_server, slow_agent):
    with app.app_context():
        make_user("user", email="rex@example.org")
    url = live_server.url
    sign_in(page, url, "rex@example.org")
    page.get_by_role("button", name=f"Chat with {slow_agent}").click()

    send(page, "Tell me a story")
    live = page.locator("article.message.assistant.live")
    expect(live.locator(".bubble.streaming")).to_contain_text("word3")
    page.reload()  # the page re-attaches to the run and replays what was said so far
    expect(page.locator("article.message.assistant.live")).to_have_count(1)
    final = page.locator("article.message.assistant").last
    expect(final).to_contain_text("The end.", timeout=10_000)
    expect(page.locator("article.message.assistant.live")).to_have_count(0)
    expect(final).to_contain_text("word0 word1 word2")

    send(page, "Another story")
    expect(page.locator("article.message.assistant.live .bubble.streaming")).to_contain_text("word2")
    page.get_by_role("button", name="Stop").click()
    stopped = page.locator("article.message.assistant").last
    expect(stopped).to_contain_text("Stopped. What was produced before Stop is kept above.")
    expect(stopped).to_contain_text("word0 word1")
    expect(stopped).not_to_contain_text("The end.")


def test_share_with_a_named_user_who_continues_a_copy(browser: Browser, page: Page, app, live_server):
    with app.app_context():
        ann = make_user("user", name="Ann", email="ann@example.org")
        make_user("user", name="Ben", email="ben@example.org")
        make_user("user", name="Cid", email="cid@example.org")
        demo = db.session.scalar(db.select(Agent).where(Agent.name == "Demo assistant"))
        chat = Conversation(user_id=ann.id, agent_id=demo.id, title="Trip planning")
        db.session.add(chat)
        db.session.flush()
        db.session.add_all([
            Message(conversation_id=chat.id, role="user", content="Plan a trip to Rome"),
            Message(conversation_id=chat.id, role="assistant", content="Day one: **Colosseum**.",
                    meta={"status": "succeeded"})])
        db.session.commit()
        chat_id = chat.id
    url = live_server.url
    sign_in(page, url, "ann@example.org")
    page.goto(f"{url}/chat/{chat_id}")
    page.get_by_role("button", name="Share").click()
    dialog = page.locator("#share-dialog")
    dialog.get_by_role("radio", name="Only the people I name").check()
    dialog.get_by_label(re.compile("^People")).fill("ben@example.org")
    dialog.get_by_role("button", name="Create link").click()
    link = page.locator("#share-link")
    expect(link).to_have_value(re.compile(r"/s/[\w-]{40,}$"))
    shared_url = link.input_value()

    ben = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(ben, url, "ben@example.org")
    assert ben.goto(shared_url).status == 200
    expect(ben.get_by_role("heading", name="Trip planning")).to_be_visible()
    expect(ben.get_by_text("A read-only snapshot shared by Ann")).to_be_visible()
    expect(ben.locator(".transcript strong")).to_have_text("Colosseum")
    expect(ben.locator("#composer-text")).to_have_count(0)  # read-only
    ben.get_by_role("button", name="Continue as my own copy").click()
    expect(ben).to_have_url(re.compile(r"/chat/\d+$"))
    assert not ben.url.endswith(f"/chat/{chat_id}")
    expect(ben.get_by_text("This is your own copy; the original is unchanged.")).to_be_visible()
    expect(ben.locator("#transcript")).to_contain_text("Plan a trip to Rome")
    send(ben, "And day two?")
    expect(ben.locator("article.message.assistant").last).to_contain_text("Offline model")
    ben.context.close()

    cid = browser.new_context().new_page()
    sign_in(cid, url, "cid@example.org")
    assert cid.goto(shared_url).status == 404
    expect(cid.get_by_role("heading", name="Not found")).to_be_visible()
    cid.context.close()


def test_the_agent_editor_previews_tool_calls(page: Page, app, live_server, screenshot):
    with app.app_context():
        make_user("admin", name="Ada Admin", email="ada@example.org")
        demo_id = db.session.scalar(db.select(Agent.id).where(Agent.name == "Demo assistant"))
    sign_in(page, live_server.url, "ada@example.org")
    page.goto(f"{live_server.url}/admin/agents/{demo_id}")
    expect(page.get_by_role("heading", name="Clock")).to_be_visible()
    page.get_by_role("button", name="Try it").click()  # no message: a 422 that htmx swaps in
    preview = page.locator("#preview-result")
    expect(preview).to_have_text("Write a message to try.")
    page.get_by_label("Message").fill("What is the current time? timezone: Europe/Rome")
    page.get_by_role("button", name="Try it").click()
    expect(preview.locator("details.step")).to_contain_text("Europe/Rome")
    expect(preview.locator("details.step")).to_contain_text("current_time")
    expect(preview).to_contain_text("Here is what the tools returned")
    screenshot(page, "agent-editor")


def test_a_long_chat_opens_at_its_end_and_shows_earlier_messages_on_demand(page: Page, app, live_server):
    with app.app_context():
        user = make_user("user", name="Lou Long", email="lou@example.org")
        conversation = Conversation(user_id=user.id, agent_id=make_agent("Archivist").id, title="A long chat")
        db.session.add(conversation)
        db.session.flush()
        db.session.add_all([Message(conversation_id=conversation.id, role="user" if n % 2 == 0 else "assistant",
                                    content=f"Line {n}") for n in range(130)])
        db.session.commit()
        conversation_id = conversation.id
    sign_in(page, live_server.url, "lou@example.org")
    page.goto(f"{live_server.url}/chat/{conversation_id}")
    messages = page.locator("#transcript article.message")
    expect(messages).to_have_count(100)
    expect(messages.first).to_contain_text("Line 30")
    expect(messages.last).to_contain_text("Line 129")
    # It opens at its end, with the composer in view; the transcript scrolls, not the page.
    expect(page.get_by_text("Line 129", exact=True)).to_be_in_viewport()
    expect(page.locator("#composer-text")).to_be_in_viewport()

    page.locator("#transcript").evaluate("transcript => { transcript.scrollTop = 0; }")  # read up to the top
    page.get_by_role("button", name="Show earlier messages").click()
    expect(messages).to_have_count(130)
    expect(page.get_by_text("Line 30", exact=True)).to_be_in_viewport()  # the reader keeps their place
    expect(messages.first).to_contain_text("Line 0")
    expect(messages.nth(30)).to_contain_text("Line 30")
    expect(page.get_by_role("button", name="Show earlier messages")).to_have_count(0)


def test_a_streamed_answer_that_leaks_a_saved_credential_is_replaced_by_the_refusal(page: Page, app, live_server,
                                                                                    scripted_model):
    secret = "ghp_7Hq2ZpL0vXw9Ks3Rt"
    reached = threading.Event()

    async def leak(messages, info):
        for word in STORY[:20]:
            await asyncio.sleep(0.03)
            yield word
        await asyncio.to_thread(reached.wait, 10)  # the page has shown the innocent words
        yield "and your token is "
        for char in secret:
            await asyncio.sleep(0.03)
            yield char

    with app.app_context():
        user = make_user("user", email="rae@example.org")
        save_credential(user.id, "github", secret)
        db.session.commit()
        name = make_agent("Leaky", model_config_id=scripted_model(function=offline.respond,
                                                                 stream_function=leak)).name
    sign_in(page, live_server.url, "rae@example.org")
    page.get_by_role("button", name=f"Chat with {name}").click()
    send(page, "What is my GitHub token?")
    # The innocent words stream live; then the end swaps the streamed bubble for the refusal.
    expect(page.locator("article.message.assistant.live .bubble.streaming")).to_contain_text("word0 word1 word2")
    expect(page.locator("article.message.assistant.live .bubble.streaming")).to_contain_text("word18 word19")
    reached.set()
    message = page.locator("article.message.assistant.status-refused")
    expect(message.locator(".bubble.answer")).to_have_text(REFUSAL, timeout=15_000)
    expect(message.get_by_test_id("run-refused")).to_contain_text("Refused.")
    expect(page.locator("article.message.assistant.live")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("word18")  # the streamed prefix is gone with the bubble
    expect(page.locator("main")).not_to_contain_text(secret[:4])
    page.reload()
    expect(page.locator("article.message.assistant.status-refused .bubble.answer")).to_have_text(REFUSAL)
