"""An MCP server per agent at /mcp/<agent slug>, over MCP's Streamable HTTP transport (2025-11-25).

POST carries one JSON-RPC message: `initialize` opens a session (its id in `Mcp-Session-Id`, which
every later request must send: 400 without it, 404 for an unknown, expired or ended one, or one of
another token), a notification or response is answered 202, a request is answered in JSON, or, for
`ask` when the client accepts it, as an SSE stream that keeps the connection alive while the agent
works and ends with the result. DELETE ends the session; GET is 405 (this server sends nothing
unprompted). A request whose `Origin` is not on MCP_ALLOWED_ORIGINS is 403 before anything else: a
web page cannot reach the server through DNS rebinding. Tokens with the `mcp` scope only.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from flask import Blueprint, Response, current_app, jsonify, request
from flask_limiter import RateLimitExceeded
from flask_login import current_user
from pydantic import ValidationError

from app.api import exchanges, mcp_server, rate_limits
from app.api.run_follow import Viewer, follow_run
from app.api.tokens import request_token
from app.extensions import db
from app.models import Agent, McpSession, Run
from app.policy.schema_subset import InvalidJSON, loads_json
from app.runtime import capacity, execution
from app.web.bodies import body_limit
from app.web.stream_client import StreamClient

bp = Blueprint("mcp", __name__)
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
SSE = "text/event-stream"
JSON = "application/json"


def refusal(status: int, message: str, code: str | None = None, rpc_code: int | None = None,
            data: Any = None, request_id: Any = None) -> Response:
    """Answer an HTTP error with a JSON-RPC error body (the SDK's client reads its code and message)."""
    response = jsonify(mcp_server.error(request_id, rpc_code or _rpc_code(status), message, data))
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="skilldesk"'
    return response


def _rpc_code(status: int) -> int:
    return types.INTERNAL_ERROR if status >= 500 else types.INVALID_REQUEST


def shape_of(status: int, message: str) -> Response:
    """The error handler's answer under /mcp/ (app/web/errors.py): a JSON-RPC error with no id."""
    response = refusal(status, message)
    if status == 405:
        response.headers["Allow"] = "POST, DELETE"
    return response


def origin_guard() -> Response | None:
    """Refuse (403) a request from a browser origin that is not on MCP_ALLOWED_ORIGINS (DNS rebinding)."""
    origin = request.headers.get("Origin")
    if origin is None:
        return None  # not a browser (or a same-origin GET): desktop clients, the SDK, curl
    allowed = {item.strip().rstrip("/") for item in (current_app.config["MCP_ALLOWED_ORIGINS"] or "").split(",")
               if item.strip()}
    if origin.rstrip("/") in allowed:
        return None
    return refusal(403, f"Origin {origin[:100]} may not call this MCP server; an admin can allow it with "
                        "SKILLDESK_MCP_ALLOWED_ORIGINS.")


@bp.errorhandler(exchanges.ExchangeRefused)
def _refused(error: exchanges.ExchangeRefused):
    response = refusal(error.status, error.message, error.kind)
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response


@bp.errorhandler(RateLimitExceeded)
def _rate_limited(_error: RateLimitExceeded):
    seconds = rate_limits.retry_after()
    response = refusal(429, f"Too many requests for this token or its user; try again in {seconds} s.")
    response.headers["Retry-After"] = str(seconds)
    return response


@bp.route("/<slug>", methods=["GET", "POST", "DELETE"])
@body_limit("MCP_MAX_BODY_BYTES")
def endpoint(slug: str):
    """The agent's MCP endpoint (Streamable HTTP)."""
    agent = exchanges.agent_for(slug, current_user)
    if request.method == "GET":
        return shape_of(405, "This server sends no messages of its own: there is no stream to open with GET.")
    if request.method == "DELETE":
        session = _session(agent)
        if isinstance(session, Response):
            return session
        mcp_server.close_session(session)
        return Response(status=204)
    return _post(agent)


def _post(agent: Agent):
    accept = request.accept_mimetypes
    takes_json, takes_sse = accept.best_match([JSON]) == JSON, accept.best_match([SSE]) == SSE
    if not (takes_json or takes_sse):
        return refusal(406, "Accept application/json and text/event-stream.")
    if request.mimetype != "application/json":
        return refusal(415, "Send the JSON-RPC message as application/json.")
    try:
        raw = loads_json(request.get_data(cache=True))
    except InvalidJSON as problem:
        return refusal(400, f"Parse error: {problem}", rpc_code=types.PARSE_ERROR)
    if isinstance(raw, list):
        return refusal(400, "Send one JSON-RPC message per request (batches ended with 2025-06-18).")
    try:
        message = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        return refusal(400, "Not a JSON-RPC 2.0 message.", request_id=raw.get("id") if isinstance(raw, dict) else None)
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version not in mcp_server.SUPPORTED_VERSIONS:
        return refusal(400, f"Unsupported protocol version {version[:30]!r}.",
                       rpc_code=types.UNSUPPORTED_PROTOCOL_VERSION, request_id=getattr(message, "id", None),
                       data={"supported": list(mcp_server.SUPPORTED_VERSIONS), "requested": version[:30]})
    if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
        return _initialize(agent, message)
    session = _session(agent)
    if isinstance(session, Response):
        return session
    if not isinstance(message, types.JSONRPCRequest):
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            _cancel(session, (message.params or {}).get("requestId"))
        return Response(status=202)
    return _request(agent, session, message, takes_json, takes_sse)


def _session(agent: Agent) -> McpSession | Response:
    key = request.headers.get(SESSION_HEADER)
    if not key:
        return refusal(400, f"Send the {SESSION_HEADER} header that initialize gave (or initialize first).")
    session = mcp_server.find_session(key, request_token(), agent)
    if session is None:
        return refusal(404, "Session not found: it ended or expired; initialize a new one.")
    return session


def _initialize(agent: Agent, message: types.JSONRPCRequest) -> Response:
    params = message.params or {}
    try:
        asked = types.InitializeRequestParams.model_validate(params)
    except ValidationError:
        return jsonify(mcp_server.error(message.id, types.INVALID_PARAMS, "initialize needs protocolVersion, "
                                        "capabilities and clientInfo."))
    version = mcp_server.negotiate(asked.protocol_version)
    client = f"{asked.client_info.name} {asked.client_info.version}".strip()
    key = mcp_server.open_session(request_token(), agent, version, client)
    response = jsonify(mcp_server.result(message.id, mcp_server.initialize_result(agent, version)))
    response.headers[SESSION_HEADER] = key
    return response


def _request(agent: Agent, session: McpSession, message: types.JSONRPCRequest, takes_json: bool, takes_sse: bool):
    params = message.params or {}
    if message.method == "ping":
        return jsonify(mcp_server.result(message.id, {}))
    if message.method == "tools/list":
        return jsonify(mcp_server.result(message.id, {"tools": mcp_server.tools_of(agent)}))
    if message.method != "tools/call":
        return jsonify(mcp_server.error(message.id, types.METHOD_NOT_FOUND, f"Method not found: {message.method}"))
    name, arguments = params.get("name"), params.get("arguments") or {}
    if name != mcp_server.ASK:
        return jsonify(mcp_server.error(message.id, types.INVALID_PARAMS, f"Unknown tool: {name!r}."))
    try:
        asked = mcp_server.ask_request(arguments)
    except exchanges.ExchangeRefused as refused:  # a tool error the calling model can read and correct
        return jsonify(mcp_server.result(message.id, mcp_server.tool_error(refused.message)))
    app = current_app._get_current_object()
    capacity.admit_turn(app)
    release = capacity.take_stream(app)
    try:
        exchange = exchanges.begin(agent, current_user, asked, "mcp")
    except exchanges.ExchangeRefused as refused:
        release()
        if refused.status in (429, 503):
            raise
        return jsonify(mcp_server.error(message.id, types.INVALID_PARAMS if refused.status == 400 else
                                        types.INVALID_REQUEST, refused.message))
    except BaseException:
        release()
        raise
    session_id = session.id
    token = request_token()
    viewer = Viewer(token_id=token.id if token is not None else None)  # read before the commit expires it
    mcp_server.note_call(session_id, message.id, exchange.run_id)
    progress = ((params.get("_meta") or {}) if isinstance(params.get("_meta"), dict) else {}).get("progressToken")
    base_url = request.url_root
    if not takes_sse:  # a client that takes JSON only waits for the whole answer, with no keep-alive
        db.session.remove()  # no connection held while the run goes on
        answer = "".join(_answer(app, exchange, message.id, session_id, None, base_url, viewer, None, release))
        if not answer:  # the run's end never came (the run is gone, or the token was revoked meanwhile)
            return jsonify(mcp_server.error(message.id, types.INTERNAL_ERROR,
                                            "The answer could not be followed to its end; ask again."))
        return Response(answer, mimetype=JSON)
    follow = _answer(app, exchange, message.id, session_id, progress, base_url, viewer, StreamClient(), release)
    response = Response(follow, mimetype=SSE, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.call_on_close(release)
    return response


def _answer(app, exchange: exchanges.Exchange, request_id: Any, session_id: int, progress: Any, base_url: str,
            viewer: Viewer, client: StreamClient | None, release):
    """Follow the run of `ask`: progress notifications for its tool steps, keep-alives, then the result.

    As SSE events with a client (the stream), else the result alone as JSON text.
    """
    steps = 0

    def encode(stored, end, message) -> list[str]:
        nonlocal steps
        frames = []
        for event in stored:
            if event.type == "tool_result" and progress is not None:
                steps += 1
                frames.append(_event({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                    "progressToken": progress, "progress": steps,
                    "message": f"Used {(event.data or {}).get('name')}"}}))
        if end is not None:
            run = db.session.get(Run, exchange.run_id)
            answer = mcp_server.result(request_id, mcp_server.ask_result(exchange, run, message, base_url))
            frames.append(_event(answer) if client is not None else json.dumps(answer, ensure_ascii=False))
        return frames

    try:
        yield from follow_run(app, exchange.run_id, 0, viewer, encode, client)
    finally:
        with app.app_context():
            mcp_server.note_call(session_id, request_id, None)
            # Disconnecting is not cancelling (the spec): a kept conversation's run goes on to its end; a
            # stateless one is purged, which stops its run.
            exchanges.finish(exchange, stop=False)
        release()


def _event(message: dict[str, Any]) -> str:
    return f"event: message\ndata: {json.dumps(message, ensure_ascii=False, separators=(',', ':'))}\n\n"


def _cancel(session: McpSession, request_id: Any) -> None:
    run_id = mcp_server.run_of_call(session, request_id)
    run = db.session.get(Run, run_id) if run_id else None
    if run is not None and run.active:
        execution.request_stop(run)

