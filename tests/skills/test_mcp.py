"""The MCP skill against a real server: a process over stdio, and streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from pydantic import ValidationError
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart

from app.extensions import db
from app.guards.credentials import MissingSecret, credential_value, fill_headers
from app.models.credentials import Credential
from app.runtime.untrusted import unfence
from app.skills.mcp import Config
from tests.skill_chat import chat, scripted, streamed

SERVER_SCRIPT = Path(__file__).resolve().parent.parent / "mcp_servers" / "notes.py"


class Script:
    """A scripted model: call one tool with fixed arguments, then answer with what it returned."""

    def __init__(self, tool: str, args: dict | None = None) -> None:
        self.tool, self.args = tool, args or {}
        self.tools_seen: list[list[str]] = []

    def respond(self, messages, info) -> ModelResponse:
        if info.output_tools and not info.allow_text_output:  # the title job
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Notes chat"})])
        self.tools_seen.append(sorted(tool.name for tool in info.function_tools))
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        if returned:
            said = " | ".join(unfence(str(part.content)) for part in returned)  # results reach models fenced
            return ModelResponse(parts=[TextPart(f"Server said: {said}")])
        return ModelResponse(parts=[ToolCallPart(self.tool, self.args, "call-1")])

    def stream(self, messages, info):
        return streamed(self.respond(messages, info))


def run_turn(app, client, scripted_model, script: Script, settings: dict, text: str = "Note: buy milk"):
    """Chat with an agent that has the MCP skill, through the HTTP endpoints; return the run and answer."""
    return chat(app, client, "mcp", settings, model_id=scripted(scripted_model, script), text=text, name="Notes",
                timeout=60)


def stdio_settings(**extra) -> dict:
    return {"transport": "stdio", "command": sys.executable, "args": [str(SERVER_SCRIPT)], **extra}


# --- stdio ----------------------------------------------------------------------------------------


def test_stdio_server_tool_runs_in_the_server_process_with_filter_and_prefix(app, client, auth,
                                                                             scripted_model):
    script = Script("notes_add_note", {"text": "buy milk"})
    auth.login_as("user")

    run, message = run_turn(app, client, scripted_model, script,
                            stdio_settings(allowed_tools=["add_note", "environment"], tool_prefix="notes"))

    assert run.status == "succeeded", run.error
    assert script.tools_seen[0] == ["notes_add_note", "notes_environment"]  # filtered, then prefixed
    [step] = message.steps
    assert step["name"] == "notes_add_note" and not step["failed"]
    assert step["result"].startswith("stored note 1 (buy milk) in server process ")
    server_pid = int(step["result"].rsplit(" ", 1)[-1])
    assert server_pid != os.getpid()  # the answer came from the server's own process
    assert "Server said: stored note 1" in message.content


def test_stdio_server_gets_only_the_named_environment_variables(app, client, auth, scripted_model,
                                                                monkeypatch):
    monkeypatch.setenv("NOTES_GREETING", "hello")
    monkeypatch.setenv("NOTES_SECRET", "must-not-leak")
    script = Script("environment")
    auth.login_as("user")

    run, message = run_turn(app, client, scripted_model, script, stdio_settings(env=["NOTES_GREETING"]))

    assert run.status == "succeeded", run.error
    assert message.steps[0]["result"] == "greeting=hello secret=-"
    assert "delete_everything" in script.tools_seen[0]  # no filter: every tool of the server


def test_a_named_variable_that_is_not_set_fails_the_run_saying_the_fix(app, client, auth, scripted_model,
                                                                      monkeypatch):
    monkeypatch.delenv("NOTES_MISSING", raising=False)
    auth.login_as("user")
    run, _message = run_turn(app, client, scripted_model, Script("environment"),
                             stdio_settings(env=["NOTES_MISSING"]))
    assert run.status == "failed" and "NOTES_MISSING" in run.error and "an admin must set it" in run.error


# --- streamable HTTP ------------------------------------------------------------------------------


class RecordHeaders:
    """ASGI middleware that remembers the headers of every request the MCP server receives."""

    def __init__(self, app) -> None:
        self.app, self.seen = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


@pytest.fixture
def http_server():
    """Serve the notes server over streamable HTTP on 127.0.0.1, on a free port, in a thread."""
    sys.path.insert(0, str(SERVER_SCRIPT.parent))
    try:
        import notes
    finally:
        sys.path.remove(str(SERVER_SCRIPT.parent))
    recorder = RecordHeaders(notes.server.streamable_http_app())
    server = uvicorn.Server(uvicorn.Config(recorder, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/mcp", recorder
    server.should_exit = True
    thread.join(10)


def test_http_server_with_headers_from_environment_and_the_users_own_credential(
        app, client, auth, scripted_model, http_server, monkeypatch):
    url, recorder = http_server
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the admin allows this local server
    monkeypatch.setenv("NOTES_TEAM", "blue")
    auth.login_as("user")
    saved = client.post("/credentials/", data={"name": "notes_token", "value": "tok-1234567890abcdef"})
    assert saved.status_code == 302
    script = Script("team_add_note", {"text": "over http"})

    run, message = run_turn(app, client, scripted_model, script, {
        "transport": "http", "url": url, "tool_prefix": "team", "allowed_tools": ["add_note"],
        "headers": ["Authorization: Bearer {credential:notes_token}", "X-Team: {env:NOTES_TEAM}"],
    })

    assert run.status == "succeeded", run.error
    assert script.tools_seen[0] == ["team_add_note"]
    result = message.steps[0]["result"]
    assert result.startswith("stored note") and "(over http)" in result
    assert recorder.seen
    assert all(h.get("authorization") == "Bearer tok-1234567890abcdef" for h in recorder.seen)
    assert all(h.get("x-team") == "blue" for h in recorder.seen)


def test_http_server_on_a_refused_address_fails_the_run(app, client, auth, scripted_model, http_server):
    url, recorder = http_server
    auth.login_as("user")
    run, _message = run_turn(app, client, scripted_model, Script("add_note", {"text": "x"}),
                             {"transport": "http", "url": url})
    assert run.status == "failed" and "OUTBOUND_ALLOWED_HOSTS" in run.error
    assert recorder.seen == []  # nothing reached the server


def test_a_missing_credential_says_where_to_save_it(app, client, auth, scripted_model, http_server):
    url, recorder = http_server
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    auth.login_as("user")
    run, _message = run_turn(app, client, scripted_model, Script("add_note", {"text": "x"}), {
        "transport": "http", "url": url, "headers": ["Authorization: Bearer {credential:notes_token}"]})
    assert run.status == "failed" and "save it on the Credentials page" in run.error
    assert recorder.seen == []


# --- settings -------------------------------------------------------------------------------------


def test_settings_are_checked_per_transport():
    assert Config(url="https://mcp.example.org/mcp").transport == "http"
    with pytest.raises(ValidationError, match="starting with http"):
        Config(url="")
    with pytest.raises(ValidationError, match="command that starts"):
        Config(transport="stdio")
    with pytest.raises(ValidationError, match="environment variable name"):
        Config(transport="stdio", command="npx", env=["NOT-A-NAME"])
    with pytest.raises(ValidationError, match="Name: value"):
        Config(url="https://x.org/mcp", headers=["no colon here"])
    with pytest.raises(ValidationError, match="credential name"):
        Config(url="https://x.org/mcp", headers=["Authorization: Bearer {credential:bad name}"])
    with pytest.raises(ValidationError, match="Start with a letter"):
        Config(url="https://x.org/mcp", tool_prefix="9x")


# --- the user's own credentials (used by MCP headers) ---------------------------------------------


def test_credentials_are_saved_encrypted_and_never_shown_back_in_full(app, client, auth):
    user_id = auth.login_as("user")
    value = "ghp_abcdefghijklmnopqrstuvwxyz0123"

    assert client.post("/credentials/", data={"name": "github", "value": value}).status_code == 302
    page = client.get("/credentials/").text
    assert "github" in page and "••••0123" in page and value not in page and value[:-4] not in page
    with app.app_context():
        stored = db.session.scalar(db.select(Credential).where(Credential.user_id == user_id))
        assert value not in stored.secret and stored.hint == "0123"
        assert fill_headers(["Authorization: Bearer {credential:github}"], user_id) == \
            {"Authorization": f"Bearer {value}"}

    # Saving under the same name replaces the value; there is still one credential.
    assert client.post("/credentials/", data={"name": "github", "value": "short"}).status_code == 302
    with app.app_context():
        assert credential_value(user_id, "github") == "short"
        assert db.session.scalar(db.select(db.func.count(Credential.id))) == 1


def test_credential_form_errors_are_422_beside_the_field_and_never_echo_the_value(app, client, auth):
    auth.login_as("user")
    response = client.post("/credentials/", data={"name": "bad name!", "value": "s3cret-value"})
    assert response.status_code == 422
    assert 'id="credential-name-error"' in response.text and "s3cret-value" not in response.text
    response = client.post("/credentials/", data={"name": "ok", "value": ""})
    assert response.status_code == 422 and 'id="credential-value-error"' in response.text


def test_only_the_owner_deletes_a_credential_and_guests_have_none(app, client, auth):
    auth.login_as("user")
    client.post("/credentials/", data={"name": "token", "value": "owner-secret-value"})
    with app.app_context():
        credential_id = db.session.scalar(db.select(Credential.id))
    auth.logout()

    auth.login_as("user")
    assert client.post(f"/credentials/{credential_id}/delete").status_code == 404
    assert "<code>token</code>" not in client.get("/credentials/").text
    auth.logout()

    auth.login_as("guest")
    assert client.get("/credentials/").status_code == 403
    auth.logout()

    with app.app_context():
        from app.models import User

        owner = db.session.scalar(db.select(User).join(Credential, Credential.user_id == User.id))
        email = owner.email
    auth.login(email)
    assert client.post(f"/credentials/{credential_id}/delete").status_code == 302
    with app.app_context():
        assert db.session.get(Credential, credential_id) is None


def test_a_credential_saved_under_another_server_key_asks_to_be_saved_again(app, client, auth):
    user_id = auth.login_as("user")
    client.post("/credentials/", data={"name": "token", "value": "value-under-old-key"})
    app.config["SECRET_KEY"] = "a-rotated-secret-key"
    with app.app_context(), pytest.raises(MissingSecret, match="save it again"):
        credential_value(user_id, "token")


# --- DNS rebinding ------------------------------------------------------------------------------------


class Trap:
    """A listener on 127.0.0.2, standing for an address tools must never reach: it counts connections."""

    def __init__(self, port: int) -> None:
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.2", port))
        self.sock.settimeout(0.1)
        self.running = True
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.running = False
        self.thread.join(5)
        self.sock.close()


def test_a_name_that_rebinds_to_a_refused_address_never_reaches_it(app, client, auth, scripted_model,
                                                                   http_server, monkeypatch):
    url, recorder = http_server
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    trap = Trap(port)
    real_getaddrinfo = socket.getaddrinfo
    answers = []

    def rebinding_dns(host, *args, **kwargs):
        """The name's first answer is the allowed address, every later one a refused address."""
        if (host.decode() if isinstance(host, bytes) else host) != "notes.rebind.test":  # anyio sends bytes
            return real_getaddrinfo(host, *args, **kwargs)
        answers.append("127.0.0.1" if not answers else "127.0.0.2")
        return real_getaddrinfo(answers[-1], *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the address, not the name, is allowed
    auth.login_as("user")
    client.post("/credentials/", data={"name": "notes_token", "value": "tok-1234567890abcdef"})
    try:
        run, message = run_turn(app, client, scripted_model, Script("add_note", {"text": "rebound"}), {
            "transport": "http", "url": url.replace("127.0.0.1", "notes.rebind.test"),
            "headers": ["Authorization: Bearer {credential:notes_token}"]})
    finally:
        trap.close()

    assert trap.connections == 0  # nothing, the user's credential least of all, went to the rebound address
    assert answers[0] == "127.0.0.1" and recorder.seen  # the checked address was reached, by its name
    assert all(h["host"] == f"notes.rebind.test:{port}" for h in recorder.seen)
    assert all(h["authorization"] == "Bearer tok-1234567890abcdef" for h in recorder.seen)
    assert run.status == "failed" and "127.0.0.2, which is off limits" in run.error
