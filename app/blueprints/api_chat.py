"""The JSON API's conversations and messages, for a session or a personal token; behind the assistant switch.

The base transport: sending a message runs the turn to its end, the answer checked like any other
(the same agent, skills, policy and proposals as the htmx chat), then returns the assistant message
with its proposals in `metadata`.
"""

from __future__ import annotations

import concurrent.futures

from flask import Blueprint, Response, current_app, jsonify, request, stream_with_context
from flask_login import current_user

from app import api
from app.api import agui
from app.api.approval_models import CallOut
from app.api.body import json_body
from app.api.chat_models import AgentRun, ConversationOut, MessageOut, NewConversation, NewMessage, dump, parse
from app.api.errors import ApiError
from app.api.openapi import (
    AGUI_EVENT,
    ConversationData,
    ConversationPage,
    Error,
    MessageData,
    MessagePage,
    PageQuery,
    ResumeHeaders,
    ResumeQuery,
    RunningData,
    documented,
)
from app.api.query import paging, whole_number
from app.api.run_follow import Viewer, follow_run
from app.api.tokens import opened_agent_ids, opens_agent, opens_agent_id, request_token
from app.assistance.context import ContextRejected, parse_context
from app.chat import turns
from app.chat.conversations import get_own_conversation, sidebar_query
from app.chat.purge import purge_conversation
from app.extensions import db
from app.models import Agent, Conversation, Message, PendingCall, Run
from app.models.base import ID_MAX
from app.runtime import capacity, execution
from app.web.stream_client import StreamClient

bp = Blueprint("api_chat", __name__)

# How often an open AG-UI stream re-checks who follows it and whether its run is still going.
CHECK_SECONDS = 1.0
api.init_blueprint(bp)


def _paged(select, out, dumped=None) -> Response:
    page, per_page = paging(request.args.get("page"), request.args.get("perPage"))
    rows = list(db.session.scalars(select.limit(per_page + 1).offset((page - 1) * per_page)))
    return jsonify(data=dumped(rows[:per_page]) if dumped else [dump(out.of(row)) for row in rows[:per_page]],
                   meta={"page": page, "perPage": per_page, "hasNext": len(rows) > per_page})


def _messages(messages: list[Message]) -> list[dict]:
    """Dump messages, each waiting turn with its calls and how to answer them (one query for the page)."""
    calls: dict[int, list[PendingCall]] = {}
    ids = [message.id for message in messages if (message.meta or {}).get("pending")]
    if ids:
        for call in db.session.scalars(db.select(PendingCall).where(PendingCall.message_id.in_(ids))
                                       .order_by(PendingCall.id)):
            calls.setdefault(call.message_id, []).append(call)
    return [dump(MessageOut.of(message, [dump(CallOut.of(call)) for call in calls.get(message.id, [])]))
            for message in messages]


def _no_guests() -> None:
    if current_user.role == "guest":
        raise ApiError(403, "Guests read what is shared with them; they start and continue no chat.")


def _own_conversation(conversation_id: int, *options) -> Conversation:
    """The user's conversation, or 404 — also when the request's token does not name its agent."""
    conversation = get_own_conversation(conversation_id, *options)
    if not opens_agent_id(conversation.agent_id):
        raise ApiError(404, "There is no such conversation of yours.")
    return conversation


@bp.route("/conversations")
@documented(tags=("conversations",), query=PageQuery, HTTP_200=ConversationPage)
def conversations_index():
    """The user's conversations, newest first, paged (`?page=&perPage=`)."""
    query, opened = sidebar_query(current_user.id), opened_agent_ids()
    if opened is not None:
        query = query.where(Conversation.agent_id.in_(opened))
    return _paged(query, ConversationOut)


@bp.route("/conversations", methods=["POST"])
@documented(json=NewConversation, tags=("conversations",), HTTP_201=ConversationData)
def conversations_create():
    """Start a conversation with an agent the user may use."""
    _no_guests()
    body = parse(NewConversation, json_body())
    agent = db.session.get(Agent, body.agent_id)
    if agent is None or not agent.usable_by(current_user):
        raise ApiError(422, "There is no agent with that id that you may use.", fields={"agentId": "unknown"})
    if not opens_agent(agent):
        raise ApiError(403, "This token does not name that agent; create a token that does.", "AGENT_NOT_ALLOWED")
    conversation = turns.start_conversation(current_user, agent, title=body.title, source="api")
    db.session.commit()
    return jsonify(data=dump(ConversationOut.of(conversation))), 201


@bp.route("/conversations/<int:conversation_id>")
@documented(tags=("conversations",), HTTP_200=ConversationData)
def conversations_show(conversation_id: int):
    return jsonify(data=dump(ConversationOut.of(_own_conversation(conversation_id))))


@bp.route("/conversations/<int:conversation_id>", methods=["DELETE"])
@documented(tags=("conversations",), HTTP_204=None)
def conversations_delete(conversation_id: int):
    """Delete a conversation and its content for good."""
    purge_conversation(_own_conversation(conversation_id))
    db.session.commit()
    return Response(status=204)


@bp.route("/conversations/<int:conversation_id>/messages")
@documented(tags=("messages",), query=PageQuery, HTTP_200=MessagePage)
def messages_index(conversation_id: int):
    """The conversation's messages, oldest first, paged."""
    conversation = _own_conversation(conversation_id)
    select = db.select(Message).where(Message.conversation_id == conversation.id).order_by(Message.id)
    return _paged(select, MessageOut, _messages)


@bp.route("/conversations/<int:conversation_id>/messages", methods=["POST"])
@documented(json=NewMessage, tags=("messages",), HTTP_201=MessageData, HTTP_202=RunningData, HTTP_409=Error,
            HTTP_429=Error, HTTP_503=Error)
def messages_create(conversation_id: int):
    """Send a message and wait for the checked answer; 201 with the assistant message.

    A turn that ends waiting for a person answers `metadata.status` "waiting", `waitingFor` and `pending`
    (the calls, each with `answer`: `POST /api/approvals/<id>` or `POST /api/conversations/<id>/answers`).
    """
    conversation = _own_conversation(conversation_id, *turns.FOR_TURN)
    _no_guests()
    run_id = _send(conversation, parse(NewMessage, json_body()))
    try:
        execution.wait(run_id, timeout=current_app.config.get("API_TURN_SECONDS", 120))
    except concurrent.futures.TimeoutError:
        return jsonify(data={"runId": run_id, "status": "running"}), 202
    db.session.expire_all()
    answer = db.session.scalar(db.select(Message).where(Message.run_id == run_id, Message.role == "assistant"))
    if answer is None:  # the conversation was deleted while the send waited (its run stopped, then purged)
        raise ApiError(404, "The conversation was deleted while its answer was on the way.")
    return jsonify(data=_messages([answer])[0]), 201


@bp.route("/agent", methods=["POST"])
@documented(json=AgentRun, tags=("stream",), stream=AGUI_EVENT, HTTP_200=None, HTTP_409=Error, HTTP_429=Error,
            HTTP_503=Error)
def agent():
    """The AG-UI stream of the same turn as the base transport: `{threadId, message, context}`."""
    body = parse(AgentRun, json_body())
    conversation = _own_conversation(body.thread_id, *turns.FOR_TURN)
    _no_guests()
    app = current_app._get_current_object()
    # The slot before the turn, so that a refusal (503, in a turn's words) stores nothing; the turn's
    # own check then counts this slot, so these streams leave the process's last slot to the others.
    capacity.admit_turn(app)
    release = capacity.take_stream(app)
    try:
        run_id = _send(conversation, NewMessage(message=body.message, context=body.context))
    except BaseException:
        release()
        raise
    return _event_stream(agui_stream(app, str(conversation.id), run_id, viewer=_viewer(), client=StreamClient()),
                         release)


def _send(conversation, body: NewMessage) -> str:
    """Check a message as every transport does, store it and start its run; return the run id."""
    text = body.message.strip()
    error = turns.message_error(text)
    if error is not None:
        raise ApiError(422, error, fields={"message": "length"})
    if conversation.agent is None or not conversation.agent.usable_by(current_user):
        raise ApiError(403, "You can no longer use this conversation's agent.")
    if not opens_agent(conversation.agent):
        raise ApiError(403, "This token does not name this conversation's agent.", "AGENT_NOT_ALLOWED")
    try:
        context = parse_context(body.context, current_user.role)
    except ContextRejected as rejected:
        raise ApiError(422, str(rejected), fields={rejected.field: "not allowed"}) from None
    try:
        _message, run = turns.send_message(conversation, current_user, text, extras=context.as_extras() or None)
    except turns.RunInProgress:
        raise ApiError(409, turns.WAIT, "RUN_IN_PROGRESS") from None
    except turns.TooManyRuns as refused:
        raise ApiError(429, str(refused), "TOO_MANY_RUNS", retry_after=refused.retry_after) from None
    return run.id


@bp.route("/agent/<run_id>")
@documented(tags=("stream",), query=ResumeQuery, headers=ResumeHeaders, stream=AGUI_EVENT, HTTP_200=None,
            HTTP_503=Error)
def agent_resume(run_id: str):
    """Resume the AG-UI stream of one of the user's runs after an event's id (`Last-Event-ID` or `?after=`)."""
    after = whole_number("Last-Event-ID", request.headers.get("Last-Event-ID"), 0, 0, ID_MAX) \
        or whole_number("after", request.args.get("after"), 0, 0, ID_MAX)
    query = db.select(Run).join(Run.conversation).where(
        Run.id == run_id, Run.user_id == current_user.id, Conversation.deleted_at.is_(None))
    opened = opened_agent_ids()
    if opened is not None:
        query = query.where(Conversation.agent_id.in_(opened))
    run = db.session.scalar(query)
    if run is None:
        raise ApiError(404, "There is no such run of yours.")
    app = current_app._get_current_object()
    release = capacity.take_stream(app)  # 503 with Retry-After when this process streams all it can
    return _event_stream(agui_stream(app, str(run.conversation_id), run.id, after, _viewer(), StreamClient()), release)


def _event_stream(follow, release) -> Response:
    """Answer an AG-UI stream that holds one of the process's stream slots until it ends or closes."""

    def released():
        try:
            yield from follow
        finally:
            release()

    response = Response(stream_with_context(released()), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.call_on_close(release)  # also when the client went before the stream started
    return response


def _viewer() -> Viewer:
    """What signed this request in, re-checked while its stream is open: a token's id, or a session's token."""
    token = request_token()
    return Viewer(token_id=token.id) if token is not None else \
        Viewer(session_token=getattr(current_user, "session_token", None))


def agui_stream(app, thread_id: str, run_id: str, after: int = 0, viewer: Viewer | None = None,
                client: StreamClient | None = None):
    """Encode the run's stored events in AG-UI, the events after the id `after`, ending with the checked answer.

    A revoked or expired token, an ended session or a deactivated user ends the stream at its next look,
    as the chat's own stream does; the run goes on. So does a client that went away (its socket, or the
    `: keep-alive` comment written every STREAM_HEARTBEAT_SECONDS while it waits: app/web/stream_client.py),
    and the stream's slot comes back (app/api/run_follow.py).
    """
    if after < agui.STARTED_ID:
        yield agui.frame(agui.started(thread_id, run_id), agui.STARTED_ID)

    def encode(stored, _end, message) -> list[str]:
        return agui.frames(stored, thread_id, run_id, message, after)

    yield from follow_run(app, run_id, agui.stored_after(after), viewer or Viewer(), encode, client)
