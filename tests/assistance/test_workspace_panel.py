"""The Workspace assistant's panel on every page: who sees it, the page context it sends, what a send returns."""

from __future__ import annotations

import html
import json
import re

from app.extensions import db
from app.models import Message
from app.runtime import execution
from app.tables.schema import get_table
from tests.chat_driver import last_run_id
from tests.tables.factory import make_table


def panel_context(page_html: str) -> dict:
    found = re.search(r'name="context" value="([^"]*)" data-testid="workspace-assistant-context"', page_html)
    assert found, "the page has no Workspace assistant panel"
    return json.loads(html.unescape(found.group(1)))


def test_the_panel_is_on_every_page_for_users_and_admins(client, auth):
    auth.login_as("user")
    for path in ("/", "/chat/", "/account/", "/memories/"):
        page = client.get(path, follow_redirects=True)
        assert page.status_code == 200 and 'data-testid="workspace-panel"' in page.text, path
        assert panel_context(page.text) == {"page": {"resource": None, "locale": "en"}}


def test_guests_get_no_panel_and_no_endpoint(client, auth):
    auth.login_as("guest")
    assert 'data-testid="workspace-panel"' not in client.get("/chat/", follow_redirects=True).text
    assert client.post("/assistant/", data={"text": "hi"}, headers={"HX-Request": "true"}).status_code == 404


def test_a_data_page_sends_its_table_as_the_page_context(app, client, auth):
    with app.app_context():
        make_table()
    auth.login_as("admin")
    context = panel_context(client.get("/data/orders").text)
    assert context["page"]["resource"] == "data/orders"


def test_a_send_builds_the_table_and_the_panel_shows_the_live_run(app, client, auth):
    auth.login_as("admin")
    context = json.dumps({"page": {"resource": None, "locale": "en"}})
    response = client.post("/assistant/", data={"text": "create a table Contacts with name and email",
                                                "context": context}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response.text.strip().startswith('<section id="workspace-assistant"')
    run_id = re.search(r'data-run="([^"]+)"', response.text).group(1)  # the live run: steps stream in
    assert 'name="conversation_id"' in response.text
    execution.wait(run_id)
    with app.app_context():
        assert [f.name for f in get_table("contacts").fields] == ["name", "email"]
        answer = db.session.scalar(db.select(Message).where(Message.run_id == run_id, Message.role == "assistant"))
        assert answer.steps[0]["name"] == "create_table" and "Created the table Contacts" in answer.content


def test_an_empty_message_or_a_refused_context_is_a_422_beside_the_field(client, auth):
    auth.login_as("user")
    empty = client.post("/assistant/", data={"text": " "}, headers={"HX-Request": "true"})
    assert empty.status_code == 422 and 'id="workspace-assistant-error"' in empty.text
    steering = client.post("/assistant/", data={"text": "hi", "context": json.dumps({"page": {"tools": ["x"]}})},
                           headers={"HX-Request": "true"})
    assert steering.status_code == 422 and "not allowed in a message&#39;s context" in steering.text


def test_without_javascript_a_send_continues_in_the_chat_page(app, client, auth):
    auth.login_as("user")
    response = client.post("/assistant/", data={"text": "what can you do?"})
    assert response.status_code == 302 and "/chat/" in response.location
    conversation_id = int(response.location.rstrip("/").rsplit("/", 1)[-1])
    execution.wait(last_run_id(app, conversation_id))  # the run ends before the test's database goes


def test_the_panels_answer_swaps_no_chat_title_into_a_page_without_one(app, client, auth):
    """The answer's end event carried the chat page's title and sidebar item out of band (or a poll
    for them): on a data or account page neither exists, and htmx logged an error for each."""
    auth.login_as("user")
    response = client.post("/assistant/", data={"text": "hello"}, headers={"HX-Request": "true"})
    run_id = re.search(r'data-run="([^"]+)"', response.text).group(1)
    execution.wait(run_id)
    end = client.get(f"/runs/{run_id}/events").text.split("event: end\n", 1)[1]
    assert "hx-swap-oob" not in end and "/title" not in end and 'id="chat-title"' not in end
    assert "article" in end  # the answer itself
