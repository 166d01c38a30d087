"""The chat view: starting chats, sending, streaming and replay, the sidebar, rename, export, rendering."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from datetime import timedelta

import pytest
from markdown_it import MarkdownIt
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError

from app.chat import turns
from app.extensions import db
from app.models import Agent, Conversation, Message, Run, User
from app.models.base import utcnow
from app.runtime import execution
from app.web.rendering import render_markdown
from tests.chat_driver import chat_model, last_run_id, outcome, send, sse_events, start_chat, words
from tests.conftest import make_agent

HX = {"HX-Request": "true"}


def demo_agent_id(app) -> int:
    with app.app_context():
        return db.session.scalar(db.select(Agent.id).where(Agent.name == "Demo assistant"))


# --- starting chats -------------------------------------------------------------------------------

def test_new_chat_offers_only_the_agents_the_user_may_use(app, client, auth):
    with app.app_context():
        for_admins = make_agent("Admins only", roles=["admin"]).name
        for_users = make_agent("For users", roles=["user"]).name
    auth.login_as("user")
    page = client.get("/chat/").text
    assert "Chat with Demo assistant" in page and f"Chat with {for_users}" in page
    assert for_admins not in page


def test_an_agent_the_user_may_not_use_cannot_be_started(app, client, auth):
    with app.app_context():
        agent_id = make_agent(roles=["admin"]).id
    auth.login_as("user")
    assert client.post("/chat/", data={"agent_id": agent_id}).status_code == 404
    assert client.post("/chat/", data={"agent_id": 999999}).status_code == 404
    assert client.post("/chat/", data={}).status_code == 404
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Conversation.id))) == 0


def test_guests_cannot_start_chats(app, client, auth):
    with app.app_context():
        agent_id = make_agent(roles=["admin", "user", "guest"]).id
    auth.login_as("guest")
    assert "Guests can read what is shared with them" in client.get("/chat/").text
    assert client.post("/chat/", data={"agent_id": agent_id}).status_code == 403


# --- sending --------------------------------------------------------------------------------------

def test_sending_over_htmx_answers_the_bubble_and_a_live_run(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words("Hi")))
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "Hello <b>bold</b>"},
                           headers=HX)
    assert response.status_code == 200
    run_id = last_run_id(app, conversation_id)
    execution.wait(run_id)
    html = response.text
    assert re.search(r'<article id="message-\d+" class="message user"', html)
    assert "Hello &lt;b&gt;bold&lt;/b&gt;" in html  # the user's text is escaped
    assert f'sse-connect="/runs/{run_id}/events"' in html and 'sse-swap="end"' in html
    assert 'id="composer"' in html and 'hx-swap-oob="true"' in html  # a fresh composer


@pytest.mark.parametrize(("text", "error"), [
    ("", "Write a message first."),
    ("   \n  ", "Write a message first."),
    ("x" * 20_001, "The message is too long (20,001 characters; the limit is 20,000)."),
])
def test_bad_messages_are_a_422_beside_the_composer(app, client, auth, scripted_model, text, error):
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words("Hi")))
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": text}, headers=HX)
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#composer"
    assert f'<p class="error" id="composer-error">{error}</p>' in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Message.id))) == 0
        assert db.session.scalar(db.select(db.func.count(Run.id))) == 0
    plain = client.post(f"/chat/{conversation_id}/messages", data={"text": text}, follow_redirects=True)
    assert error in plain.text


def test_a_second_message_waits_for_the_running_answer(app, client, auth, scripted_model):
    release = threading.Event()

    async def slow(messages, info):
        yield "Thinking"
        while not release.is_set():
            await asyncio.sleep(0.02)

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, slow))
    run_id = send(app, client, conversation_id, "First", wait=False)
    try:
        page = client.get(f"/chat/{conversation_id}").text  # a reload re-attaches to the running run
        assert f'id="run-{run_id}"' in page and f'sse-connect="/runs/{run_id}/events"' in page
        response = client.post(f"/chat/{conversation_id}/messages", data={"text": "Second"}, headers=HX)
        assert response.status_code == 422
        assert "Wait for the current answer, or stop it, before sending another message." in response.text
        assert ">Second</textarea>" in response.text  # the text is kept in the composer
    finally:
        release.set()
        execution.wait(run_id)
    assert f'id="run-{run_id}"' not in client.get(f"/chat/{conversation_id}").text
    with app.app_context():  # the refused message stored nothing
        contents = db.session.scalars(db.select(Message.content).where(
            Message.conversation_id == conversation_id, Message.role == "user")).all()
        assert contents == ["First"]
        assert db.session.scalar(db.select(db.func.count(Run.id)).where(Run.conversation_id == conversation_id)) == 1


def test_the_database_holds_one_active_run_per_conversation(app, client, auth):
    """Two sends at once both pass any check made before writing: the database refuses the second run."""
    user_id = auth.login_as("user")
    conversation_id, _run = conversation_with_run(app, user_id, "running")
    with app.app_context():
        for status in ("queued", "running"):
            db.session.add(Run(conversation_id=conversation_id, user_id=user_id, prompt="Again", status=status))
            with pytest.raises(IntegrityError):
                db.session.commit()
            db.session.rollback()
        db.session.add(Run(conversation_id=conversation_id, user_id=user_id, prompt="Done", status="succeeded"))
        db.session.commit()  # ended runs are not limited
        conversation = db.session.get(Conversation, conversation_id)
        with pytest.raises(turns.RunInProgress):
            turns.send_message(conversation, db.session.get(User, user_id), "Hello")
        assert db.session.scalar(db.select(db.func.count(Message.id))
                                 .where(Message.conversation_id == conversation_id)) == 0


def test_an_agent_that_is_no_longer_allowed_cannot_be_messaged(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words("Hi")))
    with app.app_context():
        agent = db.session.get(Conversation, conversation_id).agent
        agent.roles = ["admin"]
        db.session.commit()
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "Hi"}, headers=HX)
    assert response.status_code == 422 and "You can no longer use this agent." in response.text


# --- the stream -----------------------------------------------------------------------------------

def test_the_stream_replays_everything_then_resumes_after_last_event_id(app, client, auth, scripted_model):
    auth.login_as("user")
    model = chat_model(scripted_model, words("One ", "two ", "three"))
    conversation_id = start_chat(app, client, model_config_id=model, skills=[{"name": "clock", "config": {}}])
    run_id = send(app, client, conversation_id, "Count")
    response = client.get(f"/runs/{run_id}/events")
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    everything = sse_events(response.text)
    ids = [int(e["id"]) for e in everything]
    assert ids == sorted(ids) and everything[-1]["event"] == "end"
    streamed = "".join(e["data"] for e in everything if e["event"] == "text")
    assert "One two three" in re.sub(r"<[^>]+>", "", streamed)
    assert re.match(r'<article id="message-\d+" class="message assistant"', everything[-1]["data"])

    middle = ids[len(ids) // 2 - 1]
    resumed = sse_events(client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": str(middle)}).text)
    assert [int(e["id"]) for e in resumed] == [i for i in ids if i > middle]
    assert resumed[-1]["event"] == "end"
    by_query = sse_events(client.get(f"/runs/{run_id}/events?after={ids[-2]}").text)
    assert [e["event"] for e in by_query] == ["end"]
    # A client reconnecting after the end (as EventSource does) gets an empty stream at once, not a hang.
    started = time.monotonic()
    assert client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": str(ids[-1])}).text == ""
    assert time.monotonic() - started < 1


def conversation_with_run(app, user_id: int, status: str) -> tuple[int, str]:
    """A conversation of the user with one run in the given status, made directly in the database."""
    with app.app_context():
        conversation = Conversation(user_id=user_id, agent_id=make_agent().id)
        db.session.add(conversation)
        db.session.flush()
        run = Run(conversation_id=conversation.id, user_id=user_id, prompt="Hi", status=status)
        db.session.add(run)
        db.session.commit()
        return conversation.id, run.id


def test_a_run_that_ended_without_an_end_event_closes_its_stream(app, client, auth):
    """A run marked failed by recover-runs (the server crashed mid-run) has no end event to wait for."""
    user_id = auth.login_as("user")
    _conversation, run_id = conversation_with_run(app, user_id, "failed")
    started = time.monotonic()
    assert client.get(f"/runs/{run_id}/events").text == ""
    assert time.monotonic() - started < 1


def test_the_stream_follows_a_live_run_and_shows_tool_steps(app, client, auth, scripted_model):

    gate = threading.Event()

    async def model(messages, info):
        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield {0: DeltaToolCall(name="current_time", json_args='{"timezone": "Europe/Rome"}',
                                    tool_call_id="t1")}
            return
        while not gate.is_set():
            await asyncio.sleep(0.01)
        yield "Done."

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model),
                                 skills=[{"name": "clock", "config": {}}])
    run_id = send(app, client, conversation_id, "time in Rome", wait=False)
    body: list[str] = []

    def read() -> None:
        response = client.get(f"/runs/{run_id}/events")
        body.append(response.text)  # reads until the end event

    reader = threading.Thread(target=read)
    reader.start()
    gate.set()
    reader.join(10)
    execution.wait(run_id)
    events = sse_events(body[0])
    kinds = [e["event"] for e in events]
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("end")
    call = next(e["data"] for e in events if e["event"] == "tool_call")
    assert '<details id="step-' in call and "current_time" in call and "Europe/Rome" in call
    result = next(e["data"] for e in events if e["event"] == "tool_result")
    assert 'hx-swap-oob="true"' in result and "(Europe/Rome)" in result


# --- the sidebar ----------------------------------------------------------------------------------

def make_conversations(app, user_id: int, count: int, title: str = "Chat {n}") -> list[int]:
    """Create conversations whose updated_at grows with n; return their ids."""
    with app.app_context():
        agent_id = make_agent().id
        start = utcnow() - timedelta(days=1)
        items = [Conversation(user_id=user_id, agent_id=agent_id, title=title.format(n=n),
                              updated_at=start + timedelta(minutes=n)) for n in range(count)]
        db.session.add_all(items)
        db.session.commit()
        return [c.id for c in items]


def sidebar_titles(html: str) -> list[str]:
    return re.findall(r'<span class="title">([^<]*)</span>', html)


def test_the_sidebar_is_newest_first_and_paged_with_an_infinite_scroll_marker(app, client, auth):
    app.config["SIDEBAR_PAGE_SIZE"] = 4
    user_id = auth.login_as("user")
    make_conversations(app, user_id, 10)
    page = client.get("/chat/").text
    assert sidebar_titles(page) == ["Chat 9", "Chat 8", "Chat 7", "Chat 6"]
    assert 'hx-get="/chat/sidebar?page=2&amp;q="' in page and 'hx-trigger="intersect once, click"' in page
    assert 'href="/chat/?page=2"' in page  # the same page without JavaScript
    assert sidebar_titles(client.get("/chat/?page=2").text) == ["Chat 5", "Chat 4", "Chat 3", "Chat 2"]
    second = client.get("/chat/sidebar?page=2", headers=HX).text
    assert sidebar_titles(second) == ["Chat 5", "Chat 4", "Chat 3", "Chat 2"]
    last = client.get("/chat/sidebar?page=3", headers=HX).text
    assert sidebar_titles(last) == ["Chat 1", "Chat 0"]
    assert "Older chats" not in last
    assert sidebar_titles(client.get("/chat/sidebar?page=9").text) == []


def test_the_sidebar_shows_only_the_users_own_live_chats(app, client, auth):
    other = auth.create("user")
    make_conversations(app, other, 3, title="Theirs {n}")
    user_id = auth.login_as("user")
    mine = make_conversations(app, user_id, 2, title="Mine {n}")
    with app.app_context():
        db.session.get(Conversation, mine[0]).deleted_at = utcnow()
        db.session.commit()
    assert sidebar_titles(client.get("/chat/").text) == ["Mine 1"]
    assert "No chats yet." in client.get("/chat/").text or sidebar_titles(client.get("/chat/").text)


def test_search_covers_titles_and_message_text(app, client, auth):
    user_id = auth.login_as("user")
    ids = make_conversations(app, user_id, 3, title="Plain {n}")
    with app.app_context():
        db.session.get(Conversation, ids[0]).title = "Quarterly BUDGET review"
        db.session.add(Message(conversation_id=ids[1], role="assistant", content="The budget is 40% spent."))
        db.session.add(Message(conversation_id=ids[2], role="user", content="Nothing to see"))
        db.session.commit()
    found = sidebar_titles(client.get("/chat/sidebar?q=budget", headers=HX).text)
    assert found == ["Plain 1", "Quarterly BUDGET review"]
    assert sidebar_titles(client.get("/chat/?q=Budget").text) == found  # the full page filters too
    assert sidebar_titles(client.get("/chat/sidebar?q=40%25").text) == ["Plain 1"]
    assert sidebar_titles(client.get("/chat/sidebar?q=%25").text) == ["Plain 1"]  # % is a character
    assert sidebar_titles(client.get("/chat/sidebar?q=_").text) == []  # _ too
    empty = client.get("/chat/sidebar?q=zebra").text
    assert sidebar_titles(empty) == [] and "No chat matches your search." in empty


def test_the_sidebar_never_loads_message_bodies(app, client, auth):
    user_id = auth.login_as("user")
    ids = make_conversations(app, user_id, 5)
    with app.app_context():
        db.session.add(Message(conversation_id=ids[0], role="user", content="secret body"))
        db.session.commit()
        engine = db.engine
    statements: list[str] = []

    def record(conn, cursor, statement, *args):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        client.get("/chat/")
        client.get("/chat/sidebar?page=1", headers=HX)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    joined = "\n".join(statements)
    assert "conversations" in joined
    assert "messages" not in joined and "model_context" not in joined


def add_messages(app, conversation_id: int, count: int) -> list[int]:
    with app.app_context():
        rows = [Message(conversation_id=conversation_id, role="user" if n % 2 == 0 else "assistant",
                        content=f"Message number {n}") for n in range(count)]
        db.session.add_all(rows)
        db.session.commit()
        return [row.id for row in rows]


def shown_numbers(html: str) -> list[int]:
    return [int(n) for n in re.findall(r"Message number (\d+)", html)]


def test_a_long_chat_opens_on_its_latest_messages_and_pages_back_on_demand(app, client, auth):
    app.config["TRANSCRIPT_PAGE_SIZE"] = 10
    user_id = auth.login_as("user")
    (conversation_id,) = make_conversations(app, user_id, 1)
    ids = add_messages(app, conversation_id, 25)

    page = client.get(f"/chat/{conversation_id}").text
    assert shown_numbers(page) == list(range(15, 25))
    assert f"/chat/{conversation_id}/earlier?before={ids[15]}" in page

    earlier = client.get(f"/chat/{conversation_id}/earlier?before={ids[15]}", headers=HX).text
    assert shown_numbers(earlier) == list(range(5, 15))
    assert f"/chat/{conversation_id}/earlier?before={ids[5]}" in earlier

    first = client.get(f"/chat/{conversation_id}/earlier?before={ids[5]}", headers=HX).text
    assert shown_numbers(first) == list(range(0, 5))
    assert "Show earlier messages" not in first


def test_a_short_chat_has_no_earlier_messages_and_paging_needs_a_message_id(app, client, auth):
    user_id = auth.login_as("user")
    (conversation_id,) = make_conversations(app, user_id, 1)
    add_messages(app, conversation_id, 3)
    page = client.get(f"/chat/{conversation_id}").text
    assert shown_numbers(page) == [0, 1, 2] and "Show earlier messages" not in page
    assert client.get(f"/chat/{conversation_id}/earlier", headers=HX).status_code == 400
    assert client.get(f"/chat/{conversation_id}/earlier?before=x", headers=HX).status_code == 400


# --- rename, delete, export -----------------------------------------------------------------------

def test_rename_over_htmx_updates_the_heading_and_the_sidebar(app, client, auth):
    user_id = auth.login_as("user")
    (conversation_id,) = make_conversations(app, user_id, 1)
    response = client.post(f"/chat/{conversation_id}/rename", data={"title": "  Trip   to Rome "}, headers=HX)
    assert response.status_code == 200
    assert '<div id="chat-title" class="chat-title" hx-swap-oob="true">' in response.text
    assert f'id="conversation-item-{conversation_id}"' in response.text
    assert response.text.count("Trip to Rome") >= 2
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).title == "Trip to Rome"


@pytest.mark.parametrize(("title", "error"), [
    ("", "Give the chat a title."), ("   ", "Give the chat a title."),
    ("t" * 201, "Use at most 200 characters."),
])
def test_a_bad_rename_is_a_422_and_changes_nothing(app, client, auth, title, error):
    user_id = auth.login_as("user")
    (conversation_id,) = make_conversations(app, user_id, 1, title="Kept")
    response = client.post(f"/chat/{conversation_id}/rename", data={"title": title}, headers=HX)
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#rename-form" and error in response.text
    plain = client.post(f"/chat/{conversation_id}/rename", data={"title": title}, follow_redirects=True)
    assert error in plain.text
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).title == "Kept"


def test_delete_from_the_chat_pages_form(app, client, auth):
    user_id = auth.login_as("user")
    first, second = make_conversations(app, user_id, 2)
    page = client.get(f"/chat/{first}").text  # the page's one delete control is a plain form (no htmx answer)
    assert f'<form method="post" action="/chat/{first}/delete"' in page
    for conversation_id in (first, second):
        plain = client.post(f"/chat/{conversation_id}/delete")
        assert plain.status_code == 302 and plain.location == "/chat/"
    for conversation_id in (first, second):
        assert client.get(f"/chat/{conversation_id}").status_code == 404
        assert client.post(f"/chat/{conversation_id}/delete").status_code == 404


def test_export_markdown_and_json(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words("**Paris**.")))
    send(app, client, conversation_id, "Capital of France?")
    client.post(f"/chat/{conversation_id}/rename", data={"title": "Capitals"})
    markdown = client.get(f"/chat/{conversation_id}/export.md")
    assert markdown.status_code == 200 and markdown.mimetype == "text/markdown"
    assert markdown.headers["Content-Disposition"] == f'attachment; filename="chat-{conversation_id}.md"'
    assert markdown.text.startswith("# Capitals\n")
    assert "## You — " in markdown.text and "Capital of France?" in markdown.text
    assert "**Paris**." in markdown.text
    exported = client.get(f"/chat/{conversation_id}/export.json")
    assert exported.mimetype == "application/json"
    data = json.loads(exported.text)
    assert data["id"] == conversation_id and data["title"] == "Capitals"
    assert [(m["role"], m["content"]) for m in data["messages"]] == [("user", "Capital of France?"),
                                                                     ("assistant", "**Paris**.")]
    assert data["messages"][1]["meta"]["status"] == "succeeded" and data["messages"][1]["output_tokens"] > 0
    assert client.get(f"/chat/{conversation_id}/export.pdf").status_code == 404


# --- rendering untrusted output -------------------------------------------------------------------

@pytest.mark.parametrize(("markdown", "forbidden"), [
    ("<script>alert(1)</script>", "<script"),
    ("[click](javascript:alert(1))", "javascript:"),
    ("[click](JaVaScRiPt:alert(1))", "javascript:"),
    ("[click](  javascript:alert(1))", "javascript:"),
    ("<a href='x' onclick='alert(1)'>x</a>", "onclick"),
    ('<img src="x" onerror="alert(1)">', "<img"),
    ("![cat](https://evil.example/cat.png)", "<img"),
    ("<iframe src='https://evil.example'></iframe>", "<iframe"),
    ("[x](data:text/html;base64,PHNjcmlwdD4=)", "data:"),
    ("<style>body{display:none}</style>", "<style"),
])
def test_markdown_from_models_is_sanitized(markdown, forbidden):
    html = str(render_markdown(markdown))
    tags = " ".join(re.findall(r"<[^>]*>", html)).lower()  # what the browser would act on
    assert forbidden not in tags, html


def test_markdown_keeps_what_is_useful():
    html = str(render_markdown("# Title\n\n**bold** and `code`\n\n```python\nprint(1)\n```\n\n"
                               "| a | b |\n|---|---|\n| 1 | 2 |\n\n[link](https://example.org)"))
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert '<code class="language-python">' in html and "<table>" in html
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">link</a>' in html


def test_images_in_answers_become_links_and_nothing_loads_from_outside(app, client, auth, scripted_model):
    auth.login_as("user")
    answer = "See ![chart](https://evil.example/track.png) and <img src=https://evil.example/x.png>"
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words(answer)))
    send(app, client, conversation_id, "Show me")
    page = client.get(f"/chat/{conversation_id}")
    assert "<img" not in page.text
    link = '<a href="https://evil.example/track.png" rel="noopener noreferrer nofollow">[image: chart]</a>'
    assert link in page.text
    assert "img-src 'self' data:" in page.headers["Content-Security-Policy"]


def test_tool_steps_are_escaped(app, client, auth):
    user_id = auth.login_as("user")
    (conversation_id,) = make_conversations(app, user_id, 1)
    with app.app_context():
        db.session.add(Message(conversation_id=conversation_id, role="assistant", content="ok", steps=[
            {"id": "s1", "name": "<b>tool</b>", "args": '{"q": "<script>x</script>"}',
             "result": "<img src=x onerror=alert(1)>", "failed": False}]))
        db.session.commit()
    page = client.get(f"/chat/{conversation_id}").text
    assert "<script>x</script>" not in page and "<img src=x" not in page and "<b>tool</b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_run_message_endpoint_renders_the_answer(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words("Answer.")))
    run_id = send(app, client, conversation_id, "Q")
    _run, message = outcome(app, run_id)
    response = client.get(f"/runs/{run_id}/message", headers=HX)
    assert response.status_code == 200 and f'id="message-{message.id}"' in response.text


def test_export_markdown_keeps_the_answer_apart_from_the_tool_steps(app, client, auth, scripted_model):
    async def model(messages, info):
        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield {0: DeltaToolCall(name="current_time", json_args='{"timezone": "Europe/Rome"}', tool_call_id="t1")}
            return
        yield "It is **late**.\nGo to bed."

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model),
                                 skills=[{"name": "clock", "config": {}}])
    send(app, client, conversation_id, "What time is it in Rome?")
    exported = client.get(f"/chat/{conversation_id}/export.md").text
    html = MarkdownIt("commonmark").render(exported)
    # The step is a list of its own and the answer a paragraph after it, not a continuation of the bullet.
    assert re.search(r"<ul>\n<li>tool <code>current_time</code> <code>[^<]*Europe/Rome[^<]*</code> → "
                     r"<code>[^<]*</code></li>\n</ul>\n"
                     r"<p>It is <strong>late</strong>.\nGo to bed.</p>", html), exported
