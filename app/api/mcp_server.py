"""An MCP server per agent (protocol revisions up to 2025-11-25), on the SDK's own protocol types.

The transport is app/blueprints/mcp.py (Streamable HTTP on Flask); this module holds what does not
depend on HTTP: sessions (stored, so any worker serves any session; a session belongs to the token
that opened it and to its agent), the server's answer to `initialize`, its tools and the result of
`ask`. The SDK's server transport is ASGI and keeps sessions in one process's memory: here the app
is WSGI under gunicorn, possibly with several workers, so the wire is implemented against the spec
with `mcp_types` for every message and result.

Tools: `ask` (the message, and `conversation`: omitted for a stateless exchange, `new` to keep one,
or the id of one of the user's conversations with this agent) answers with the agent's checked
answer, its citations and its receipt; it is the chat's own turn (app/api/exchanges.py).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

import mcp_types as types
from flask import current_app
from huey import crontab
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from app.api.exchanges import Exchange, ExchangeRefused, Request
from app.extensions import db, jobs
from app.models import Agent, ApiToken, McpSession, Message, Run
from app.models.base import utcnow
from app.runtime import receipt as receipts

SUPPORTED_VERSIONS = HANDSHAKE_PROTOCOL_VERSIONS
LATEST_VERSION = LATEST_HANDSHAKE_VERSION
DEFAULT_VERSION = types.DEFAULT_NEGOTIATED_VERSION  # a request without MCP-Protocol-Version, per the spec
SEEN_PRECISION = timedelta(minutes=1)
ASK = "ask"
ASK_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "minLength": 1, "description": "What to ask the agent."},
        "conversation": {"type": "string", "description": "Omit for a one-off question that leaves nothing "
                         "stored; `new` to start a conversation kept in Skilldesk; or the id of one of your "
                         "conversations with this agent to continue it."},
    },
    "required": ["message"],
    "additionalProperties": False,
}


def dump(model: Any) -> dict[str, Any]:
    """Return a protocol type as it goes on the wire (camelCase, unset members left out)."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """Return a JSON-RPC error message (`id` null when the request's id is unknown)."""
    return {"jsonrpc": "2.0", "id": request_id,
            "error": dump(types.ErrorData(code=code, message=message, data=data))}


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def negotiate(asked: Any) -> str:
    """Return the revision to speak: the client's when this server speaks it, else the newest it speaks."""
    return asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION


def initialize_result(agent: Agent, version: str) -> dict[str, Any]:
    """The server's answer to `initialize`: the revision, a tools capability, who it is and how to use it."""
    instructions = (f"{agent.name}, a Skilldesk agent. {agent.description}".strip() +
                    " Ask it with the `ask` tool; pass `conversation: \"new\"` to keep the exchange in Skilldesk.")
    return dump(types.InitializeResult(
        protocol_version=version, capabilities=types.ServerCapabilities(tools=types.ToolsCapability(
            list_changed=False)),
        server_info=types.Implementation(name=f"skilldesk-{agent.slug}", title=agent.name, version="1"),
        instructions=instructions))


def tools_of(agent: Agent) -> list[dict[str, Any]]:
    """The tools this agent's server offers: `ask`."""
    ask = types.Tool(name=ASK, title=f"Ask {agent.name}",
                     description=(f"Ask the Skilldesk agent {agent.name!r} and get its answer, with citations and "
                                  f"a receipt of what it changed. {agent.description}").strip(),
                     input_schema=ASK_SCHEMA,
                     annotations=types.ToolAnnotations(read_only_hint=False, open_world_hint=False))
    return [dump(ask)]


def ask_request(arguments: Any) -> Request:
    """Check the arguments of `ask`; raise ExchangeRefused (400) with what is wrong."""
    if not isinstance(arguments, dict) or set(arguments) - {"message", "conversation"}:
        raise ExchangeRefused(400, "ask takes `message` and, optionally, `conversation`.", "invalid_params")
    message = arguments.get("message")
    conversation = arguments.get("conversation")
    if not isinstance(message, str) or not message.strip():
        raise ExchangeRefused(400, "Give `message`: the question for the agent.", "invalid_params")
    if conversation is not None and (not isinstance(conversation, str) or not (
            conversation == "new" or (conversation.isdigit() and len(conversation) <= 10))):
        raise ExchangeRefused(400, "`conversation` is `new` or the id of one of your conversations.", "invalid_params")
    return Request(prompt=message.strip(), conversation=conversation)


def tool_error(text: str) -> dict[str, Any]:
    """A tool's result that reports an error (bad arguments): `isError`, with what to fix."""
    return dump(types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True))


def ask_result(exchange: Exchange, run: Run | None, message: Message | None, base_url: str) -> dict[str, Any]:
    """The result of `ask`: the answer, its sources and receipt as text, and the same as structured content."""
    meta = (message.meta or {}) if message is not None else {}
    status = meta.get("status") or (run.status if run is not None else "failed")
    answer = message.content if message is not None else ""
    blocks = [answer] if answer.strip() else []
    citations = (meta.get("knowledge") or {}).get("citations", [])
    if citations:
        blocks.append("Sources:\n" + "\n".join(
            f"[{c.get('number')}] {c.get('title')} — {base_url}knowledge/passages/{c.get('passage_id')}"
            for c in citations))
    receipt = receipts.read(meta)
    if receipt is not None:
        lines = [receipts.headline(receipt)] + [f"Not changed: {entry.get('summary')}"
                                               for entry in receipt.get("unchanged") or []]
        blocks.append("Receipt:\n" + "\n".join(lines))
    pending = [item for item in meta.get("pending", []) if isinstance(item, dict)]
    if pending:
        where = ("This question kept no conversation, so nothing waits: ask again with `conversation: \"new\"` "
                 "to answer it in Skilldesk." if exchange.ephemeral else
                 f"Answer it in Skilldesk: {base_url}chat/{exchange.conversation_id}")
        blocks.append("The agent stopped here: it waits for you (" +
                      ", ".join(f"{item.get('kind')}: {item.get('tool')}" for item in pending) + "). " + where)
    failed = status in ("failed", "interrupted")
    if failed:
        blocks.append(meta.get("error") or (run.error if run is not None else None) or "The run did not finish.")
    structured = {"answer": answer, "status": "waiting" if pending and status == "succeeded" else status,
                  "run": exchange.run_id, "conversation": None if exchange.ephemeral else exchange.conversation_id,
                  "citations": citations, "pending": pending, "proposals": meta.get("proposals", [])}
    if receipt is not None:
        structured["receipt"] = receipt
    text = "\n\n".join(blocks) or "(no answer)"
    return dump(types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                     structured_content=structured, is_error=failed))


# Sessions

def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def open_session(token: ApiToken, agent: Agent, version: str, client: str) -> str:
    """Store a new session of the token with the agent; return its id (shown to the client only). Commits."""
    key = secrets.token_urlsafe(32)
    db.session.add(McpSession(key_hash=_digest(key), token_id=token.id, agent_id=agent.id, protocol_version=version,
                              client=client[:200], calls={}))
    db.session.commit()
    return key


def find_session(key: str, token: ApiToken, agent: Agent) -> McpSession | None:
    """Return the token's live session with this agent that `key` names, else None (unknown, expired, another's)."""
    if not key or len(key) > 100:
        return None
    session = db.session.scalar(db.select(McpSession).where(McpSession.key_hash == _digest(key)))
    if session is None or session.token_id != token.id or session.agent_id != agent.id:
        return None
    now = utcnow()
    if now - session.last_seen_at > timedelta(seconds=int(current_app.config["MCP_SESSION_IDLE_SECONDS"])):
        db.session.delete(session)
        db.session.commit()
        return None
    if now - session.last_seen_at > SEEN_PRECISION:
        session.last_seen_at = now
        db.session.commit()
    return session


def close_session(session: McpSession) -> None:
    """End a session (DELETE): its id answers 404 from now on. Commits."""
    db.session.delete(session)
    db.session.commit()


def note_call(session_id: int, request_id: Any, run_id: str | None) -> None:
    """Remember (or, with None, forget) which run answers a request of the session, for notifications/cancelled."""
    session = db.session.get(McpSession, session_id, with_for_update=True)
    if session is None:
        return
    calls = dict(session.calls or {})
    if run_id is None:
        calls.pop(str(request_id), None)
    else:
        calls[str(request_id)] = run_id
    session.calls = calls
    db.session.commit()


def run_of_call(session: McpSession, request_id: Any) -> str | None:
    return (session.calls or {}).get(str(request_id))


@jobs.periodic(crontab(minute="*/15"))
def purge_idle_sessions() -> None:
    """Delete the MCP sessions idle for longer than MCP_SESSION_IDLE_SECONDS."""
    idle = utcnow() - timedelta(seconds=int(current_app.config["MCP_SESSION_IDLE_SECONDS"]))
    db.session.execute(db.delete(McpSession).where(McpSession.last_seen_at < idle))
    db.session.commit()
