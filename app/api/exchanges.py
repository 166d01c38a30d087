"""Another tool's exchange with an agent (the OpenAI-compatible API, MCP): the chat's own turn, stateless by default.

Every answer goes through the runtime the chat uses (`turns.send_message`: the per-user run bound,
the process's capacity, the agent's skills, approvals, answer review and output guardrails). A
stateless exchange still runs in a conversation, an ephemeral one: listed nowhere, seeded with the
client's earlier messages, and purged when the request ends (whatever way it ends); a periodic job
purges any a crash left behind. With a conversation asked for (`new`, or the id of one of the
user's), the exchange is stored like a chat and shown in the sidebar with its source.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from huey import crontab
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

from app.api.tokens import request_token
from app.chat import turns
from app.chat.purge import purge_conversation
from app.extensions import db, jobs
from app.models import Agent, Conversation, Message, Run, User
from app.models.base import ID_MAX, utcnow
from app.models.chat import ACTIVE_STATUSES
from app.runtime import execution
from app.runtime.model_choice import model_spec_for

log = logging.getLogger(__name__)

# An ephemeral conversation older than this with no run under way was left by a crash: the job purges it.
ABANDONED_AFTER = timedelta(minutes=30)
PURGED_PER_SWEEP = 100


class ExchangeRefused(Exception):
    """An exchange that cannot start; nothing was stored. `kind` names the reason for the encoders."""

    def __init__(self, status: int, message: str, kind: str, retry_after: int | None = None,
                 param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.retry_after, self.param = status, message, kind, retry_after, param


@dataclass
class Exchange:
    """A started exchange: its conversation, its run, and whether the conversation goes when the request ends."""

    conversation_id: int
    run_id: str
    ephemeral: bool
    agent_slug: str
    history_length: int = 0


@dataclass
class Request:
    """What a client asks, already checked: the earlier turns, the new message, instructions and settings."""

    prompt: str
    earlier: list[tuple[str, str]] = field(default_factory=list)  # (user | assistant, text), in order
    instructions: list[str] = field(default_factory=list)
    model_settings: dict[str, Any] = field(default_factory=dict)
    conversation: str | None = None  # None: stateless; "new"; or the id of one of the user's conversations


def usable_agents(user: User) -> list[Agent]:
    """Return the agents the user may use and the request's token opens, by name."""
    token = request_token()
    agents = db.session.scalars(db.select(Agent).order_by(Agent.name))
    return [agent for agent in agents if agent.usable_by(user) and (token is None or token.opens(agent))]


def agent_for(slug: str, user: User) -> Agent:
    """Return the agent a client names by its slug; 404 unless the user may use it, 403 unless the token opens it."""
    agent = db.session.scalar(db.select(Agent).where(Agent.slug == slug)) if slug else None
    if agent is None or not agent.usable_by(user):  # another role's agent is as unknown as a missing one
        raise ExchangeRefused(404, f"There is no agent {slug!r} that you may use; GET /v1/models lists yours.",
                              "model_not_found", param="model")
    token = request_token()
    if token is not None and not token.opens(agent):
        raise ExchangeRefused(403, f"This token does not name the agent {slug!r}; create a token that does.",
                              "agent_not_allowed", param="model")
    return agent


def begin(agent: Agent, user: User, asked: Request, source: str) -> Exchange:
    """Store the message and start its run in a conversation (an ephemeral one unless one was asked for).

    Raises `ExchangeRefused` having stored nothing: a guest, a message too long, someone else's
    conversation, an answer under way there, the per-user run bound (429) or the process's capacity (503).
    """
    if user.role == "guest":
        raise ExchangeRefused(403, "Guests read what is shared with them; they start and continue no chat.",
                              "permission_denied")
    error = turns.message_error(asked.prompt)
    if error is not None:
        raise ExchangeRefused(400, error, "message_too_long" if asked.prompt else "invalid_value", param="messages")
    conversation = _conversation_for(agent, user, asked, source)
    extras: dict[str, Any] = {}
    if asked.instructions:
        extras["instructions"] = list(asked.instructions)
    if asked.model_settings:
        extras["model_settings"] = dict(asked.model_settings)
    try:
        _message, run = turns.send_message(conversation, user, asked.prompt, extras=extras or None)
    except turns.RunInProgress:
        raise ExchangeRefused(409, turns.WAIT, "run_in_progress") from None
    except turns.TooManyRuns as refused:
        raise ExchangeRefused(429, str(refused), "too_many_runs", retry_after=refused.retry_after) from None
    except BaseException:
        db.session.rollback()
        raise
    return Exchange(conversation.id, run.id, conversation.ephemeral, agent.slug, len(asked.earlier))


def _conversation_for(agent: Agent, user: User, asked: Request, source: str) -> Conversation:
    if asked.conversation not in (None, "new"):
        conversation = _own_conversation(asked.conversation, user)
        if conversation.agent_id != agent.id:
            raise ExchangeRefused(400, f"Conversation {conversation.id} is with another agent; name its agent as "
                                       "the model, or start a new conversation.", "conversation_mismatch",
                                  param="X-Skilldesk-Conversation")
        return conversation  # its stored history is the conversation: the client's earlier messages are not added
    conversation = turns.start_conversation(user, agent, source=source)
    conversation.ephemeral = asked.conversation is None
    db.session.flush()
    if asked.earlier:
        if not conversation.ephemeral:  # the earlier turns show in the transcript too
            db.session.add_all([Message(conversation_id=conversation.id, role=role, content=text,
                                        meta={"status": "succeeded"} if role == "assistant" else {})
                                for role, text in asked.earlier])
        conversation.model_context = ModelMessagesTypeAdapter.dump_json(history_of(asked.earlier)).decode()
    return conversation


def _own_conversation(given: str, user: User) -> Conversation:
    conversation_id = int(given) if given.isascii() and given.isdigit() and len(given) <= 10 else None
    if conversation_id is not None and conversation_id > ID_MAX:  # names no row (PostgreSQL would raise)
        conversation_id = None
    conversation = db.session.get(Conversation, conversation_id, options=turns.FOR_TURN) \
        if conversation_id is not None else None
    if conversation is None or conversation.user_id != user.id or conversation.deleted_at is not None \
            or conversation.ephemeral:
        raise ExchangeRefused(404, "There is no such conversation of yours; send `X-Skilldesk-Conversation: new` "
                                   "to start one.", "conversation_not_found", param="X-Skilldesk-Conversation")
    return conversation


def history_of(earlier: list[tuple[str, str]]) -> list[ModelMessage]:
    """Turn a client's earlier turns into the model context a conversation starts from."""
    messages: list[ModelMessage] = []
    for role, text in earlier:
        if role == "user":
            messages.append(ModelRequest(parts=[UserPromptPart(content=text)]))
        else:
            messages.append(ModelResponse(parts=[TextPart(content=text)]))
    return messages


def finish(exchange: Exchange, stop: bool = True) -> None:
    """End an exchange whose request is over: stop its run if it still goes, and purge it if it was ephemeral.

    Call it in an app context, with nothing pending in the session. A stored conversation keeps
    what the run produced (a stopped run ends `cancelled` with the answer so far); with `stop=False`
    its run goes on to the end (MCP: a client that disconnects has not cancelled).
    """
    run = db.session.get(Run, exchange.run_id)
    if stop and run is not None and run.status in ACTIVE_STATUSES and not exchange.ephemeral:
        stop_and_wait(run)
    if exchange.ephemeral:
        conversation = db.session.get(Conversation, exchange.conversation_id)
        if conversation is not None and conversation.deleted_at is None:
            purge_conversation(conversation)  # stops a run still going first, and waits for its end
            db.session.commit()


def stop_and_wait(run: Run) -> None:
    """Stop a run whose client went away, and wait for it to end (its answer so far is kept)."""
    execution.request_stop(run)
    execution.wait(run.id, timeout=10)


@jobs.periodic(crontab(minute="*/10"))
def purge_abandoned_exchanges() -> None:
    """Purge the ephemeral conversations a crash left behind (no run under way, untouched for a while)."""
    stale = utcnow() - ABANDONED_AFTER
    under_way = db.select(Run.conversation_id).where(Run.status.in_(ACTIVE_STATUSES))
    left = list(db.session.scalars(db.select(Conversation).where(
        Conversation.ephemeral.is_(True), Conversation.deleted_at.is_(None), Conversation.updated_at < stale,
        Conversation.id.not_in(under_way)).limit(PURGED_PER_SWEEP)))
    for conversation in left:
        purge_conversation(conversation)
    if left:
        db.session.commit()
        log.info("purged %s abandoned stateless exchange(s)", len(left))


def max_answer_tokens(agent: Agent) -> int:
    """Return the most tokens an answer of the agent's model may have: its configured maximum, else its window."""
    spec = model_spec_for(agent)
    return spec.max_tokens or spec.context_window
