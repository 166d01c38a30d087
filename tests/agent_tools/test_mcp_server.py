"""An MCP server per agent, tested with the mcp SDK's own client over Streamable HTTP against a served Skilldesk:
sessions, the `ask` tool, the Origin guard, bad and foreign sessions, unauthorized tokens."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from app.extensions import db
from app.models import Conversation, McpSession, Message, Run
from tests.agent_tools.conftest import bearer, token_for
from tests.chat_driver import chat_model, until, words, working_until
from tests.conftest import make_agent

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def helper(app, scripted_model):
    with app.app_context():
        return make_agent("Helper",
                          model_config_id=chat_model(scripted_model, words("Hello ", "over MCP."))).slug


def mcp_client(url: str, secret: str) -> Client:
    http = create_mcp_http_client(headers=bearer(secret))
    return Client(streamable_http_client(url, http_client=http))


def leaves(group: BaseException) -> list[BaseException]:
    """The exceptions inside nested exception groups."""
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in leaves(inner)]
    return [group]


def counts(app) -> tuple[int, int]:
    with app.app_context():
        return (db.session.scalar(db.select(db.func.count(Message.id))),
                db.session.scalar(db.select(db.func.count(McpSession.id))))


def test_the_sdk_client_asks_an_agent_over_streamable_http(app, client, auth, served, helper):
    user_id = auth.login_as("user")
    secret = token_for(app, user_id, scopes=("mcp",))
    url = f"{served.url}/mcp/{helper}"

    async def journey():
        async with mcp_client(url, secret) as mcp:
            assert mcp.protocol_version == "2025-11-25"  # the SDK probed the newest revision, then fell back
            assert mcp.server_info.name == f"skilldesk-{helper}"
            assert counts(app)[1] == 1  # one session, stored
            tools = await mcp.list_tools()
            stateless = await mcp.call_tool("ask", {"message": "Hi?"})
            kept = await mcp.call_tool("ask", {"message": "Hi again?", "conversation": "new"})
            bad = await mcp.call_tool("ask", {"question": "wrong argument"})
            return tools, stateless, kept, bad

    tools, stateless, kept, bad = asyncio.run(journey())
    assert [tool.name for tool in tools.tools] == ["ask"]
    assert tools.tools[0].input_schema["required"] == ["message"]
    assert stateless.content[0].text == "Hello over MCP." and not stateless.is_error
    assert stateless.structured_content["status"] == "succeeded"
    assert stateless.structured_content["conversation"] is None
    conversation_id = kept.structured_content["conversation"]
    sidebar = client.get("/chat/sidebar").text
    assert f"conversation-item-{conversation_id}" in sidebar and ">MCP</span>" in sidebar
    assert bad.is_error and "`message`" in bad.content[0].text  # a tool error the calling model can correct
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).source == "mcp"
        runs = {run.status for run in db.session.scalars(db.select(Run))}
        assert runs == {"succeeded"}
    assert until(lambda: counts(app) == (2, 0))  # the stateless exchange purged; the session ended (DELETE)


def initialize(url: str, secret: str, **headers) -> httpx.Response:
    return httpx.post(url, json=INIT, headers={**bearer(secret), **ACCEPT, **headers}, timeout=10)


def test_sessions_follow_the_spec(app, auth, served, helper):
    user_id = auth.create("user")
    secret, other = token_for(app, user_id, scopes=("mcp",)), token_for(app, user_id, scopes=("mcp",))
    url = f"{served.url}/mcp/{helper}"
    opened = initialize(url, secret)
    assert opened.status_code == 200 and opened.json()["result"]["protocolVersion"] == "2025-11-25"
    session = opened.headers["Mcp-Session-Id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    def send(message, token=secret, **headers):
        return httpx.post(url, json=message, headers={**bearer(token), **ACCEPT, **headers}, timeout=10)

    assert send(listing, **{"Mcp-Session-Id": session}).json()["result"]["tools"][0]["name"] == "ask"
    assert send({"jsonrpc": "2.0", "method": "notifications/initialized"},
                **{"Mcp-Session-Id": session}).status_code == 202
    missing = send(listing)
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32600
    assert send(listing, **{"Mcp-Session-Id": "not-a-session"}).status_code == 404
    assert send(listing, token=other, **{"Mcp-Session-Id": session}).status_code == 404  # another token's
    old = send(listing, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "1999-01-01"})
    assert old.status_code == 400 and old.json()["error"]["code"] == -32022
    unknown = send({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, **{"Mcp-Session-Id": session})
    assert unknown.json()["error"]["code"] == -32601
    assert httpx.get(url, headers={**bearer(secret), "Accept": "text/event-stream",
                                   "Mcp-Session-Id": session}).status_code == 405
    assert httpx.delete(url, headers={**bearer(secret), "Mcp-Session-Id": session}).status_code == 204
    assert send(listing, **{"Mcp-Session-Id": session}).status_code == 404  # ended
    assert send({"jsonrpc": "2.0", "id": 4}).status_code == 400  # not JSON-RPC
    assert httpx.post(url, content=b"{", headers={**bearer(secret), **ACCEPT, "Content-Type": "application/json"}
                      ).json()["error"]["code"] == -32700


def test_a_client_that_takes_json_only_gets_the_whole_answer_as_one_json_result(app, auth, served, helper):
    secret = token_for(app, auth.create("user"), scopes=("mcp",))
    url = f"{served.url}/mcp/{helper}"
    session = initialize(url, secret).headers["Mcp-Session-Id"]
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "ask", "arguments": {"message": "Hi"}}}
    answered = httpx.post(url, json=call, timeout=60,
                          headers={**bearer(secret), "Accept": "application/json", "Mcp-Session-Id": session})
    assert answered.status_code == 200 and answered.headers["Content-Type"].startswith("application/json")
    result = answered.json()
    assert result["id"] == 9 and "Hello over MCP." in result["result"]["content"][0]["text"]


def test_a_browser_origin_must_be_on_the_allow_list(app, auth, served, helper):
    secret = token_for(app, auth.create("user"), scopes=("mcp",))
    url = f"{served.url}/mcp/{helper}"
    rebinding = initialize(url, secret, Origin="http://attacker.example")
    assert rebinding.status_code == 403 and "Origin" in rebinding.json()["error"]["message"]
    assert initialize(url, "no-token", Origin="http://attacker.example").status_code == 403  # before anything
    served.app.config["MCP_ALLOWED_ORIGINS"] = "http://localhost:6274, https://tools.example.org"
    assert initialize(url, secret, Origin="https://tools.example.org").status_code == 200
    assert initialize(url, secret, Origin="https://tools.example.org.attacker.example").status_code == 403
    assert counts(app) == (0, 1)


def test_tokens_that_do_not_open_the_agent_are_refused(app, auth, served, helper):
    user_id = auth.create("user")
    with app.app_context():
        others = make_agent("Other")
        admins = make_agent("Admins only", roles=["admin"]).slug
    url = f"{served.url}/mcp/{helper}"
    assert initialize(url, "sdk_" + "x" * 43).status_code == 401
    assert initialize(url, token_for(app, user_id, scopes=("openai",))).status_code == 403
    assert initialize(url, token_for(app, user_id, scopes=("mcp",), agents=[others])).status_code == 403
    assert initialize(f"{served.url}/mcp/{admins}", token_for(app, user_id, scopes=("mcp",))).status_code == 404

    async def unauthorized():
        async with mcp_client(url, "sdk_" + "y" * 43):
            pass

    with pytest.raises(ExceptionGroup) as refused:
        asyncio.run(unauthorized())
    errors = leaves(refused.value)
    assert any(isinstance(e, MCPError) and "API token" in e.error.message for e in errors), errors
    assert counts(app) == (0, 0)


def test_a_cancelled_request_stops_its_run_and_a_kept_answer_stays(app, auth, served, scripted_model):
    release = threading.Event()
    with app.app_context():
        slow = make_agent("Slow", model_config_id=chat_model(scripted_model, working_until(release))).slug
    secret = token_for(app, auth.create("user"), scopes=("mcp",))
    url = f"{served.url}/mcp/{slow}"
    session = initialize(url, secret).headers["Mcp-Session-Id"]
    headers = {**bearer(secret), **ACCEPT, "Mcp-Session-Id": session}
    lines: list[str] = []

    def ask() -> None:
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "ask", "arguments": {"message": "Go", "conversation": "new"}}}
        with httpx.stream("POST", url, json=call, headers=headers, timeout=30) as response:
            lines.extend(response.iter_lines())

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    try:
        with app.app_context():
            def noted() -> bool:
                db.session.expire_all()
                return bool(db.session.scalar(db.select(McpSession.calls)))
            assert until(noted)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        assert httpx.post(url, json=cancel, headers=headers, timeout=10).status_code == 202
        asking.join(30)
        with app.app_context():
            run = db.session.scalar(db.select(Run))
            answer = db.session.scalar(db.select(Message).where(Message.role == "assistant"))
            assert run.status == "cancelled" and answer.content.startswith("Working")
        results = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
        assert results[-1]["id"] == 7 and results[-1]["result"]["structuredContent"]["status"] == "cancelled"
    finally:
        release.set()
