"""A turn as the runtime loop takes it: everything a run needs, read from the database before the run leaves
the request (or the job) that starts it, so the loop does no database work before the model is called."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.tools import DeferredToolResults

from app.extensions import db
from app.models import Agent, Conversation, Message, Run, User
from app.models.base import utcnow
from app.runtime import deferred, receipt
from app.runtime.builder import AgentSpec, Person
from app.runtime.history import load_history
from app.runtime.model_choice import model_spec_for

# How many earlier answers' receipts a turn reads to check claims about earlier turns.
EARLIER_ANSWERS = 20


@dataclass
class Turn:
    """Everything a run needs, read from the database before the run leaves the request."""

    run_id: str
    conversation_id: int
    prompt: str | None
    agent: AgentSpec | None
    person: Person
    history: list[ModelMessage]
    extras: dict[str, Any] = field(default_factory=dict)
    # Answers to the calls an earlier run left waiting, and instructions that come with them (plan approval).
    deferred: DeferredToolResults | None = None
    instructions: list[str] = field(default_factory=list)
    # The changes earlier answers of the conversation made (their receipts): a claim about the past is
    # checked against them, never against this turn's.
    earlier: list[dict[str, Any]] = field(default_factory=list)


def prepare_queued(run_id: str) -> Turn | None:
    """Mark a queued run running and read its turn (None when it is no longer queued); commits."""
    run = db.session.get(Run, run_id)
    if run is None or run.status != "queued":
        return None
    conversation = db.session.get(Conversation, run.conversation_id)
    agent = db.session.get(Agent, run.agent_id) if run.agent_id else None
    user = db.session.get(User, run.user_id) if run.user_id else None
    turn = prepare(run, conversation, agent, user, run_extras(run_id))
    db.session.commit()
    return turn


def prepare(run: Run, conversation: Conversation | None, agent: Agent | None, user: User | None,
            extras: dict[str, Any]) -> Turn:
    """Mark a run running and read everything it needs into a `Turn`; the caller commits.

    Runs in the thread that starts the run (a request or a job), so the runtime loop does no
    database work before the model is called.
    """
    run.status, run.started_at = "running", utcnow()
    if agent is None or conversation is None:
        return Turn(run.id, run.conversation_id, run.prompt or "", None, Person.of(user), [])
    history = load_history(conversation)
    resumption = deferred.resume(run, history)
    return Turn(
        run_id=run.id,
        conversation_id=conversation.id,
        prompt=resumption.prompt,
        agent=AgentSpec.of(agent, model_spec_for(agent, conversation)),
        person=Person.of(user),
        history=history,
        deferred=resumption.results,
        instructions=[*resumption.instructions, *extras.get("instructions", [])],
        extras=extras,
        earlier=earlier_changes(conversation.id),
    )


def earlier_changes(conversation_id: int) -> list[dict[str, Any]]:
    """Return the changes the conversation's latest answers recorded in their receipts, oldest first."""
    metas = db.session.scalars(db.select(Message.meta).where(
        Message.conversation_id == conversation_id, Message.role == "assistant")
        .order_by(Message.id.desc()).limit(EARLIER_ANSWERS))
    return receipt.earlier_changes(reversed(list(metas)))


def run_extras(run_id: str) -> dict[str, Any]:
    """Return the extras stored with the run's user message (see turns.send_message)."""
    meta = db.session.scalar(db.select(Message.meta).where(Message.run_id == run_id, Message.role == "user")
                             .order_by(Message.id).limit(1))
    return dict((meta or {}).get("extras") or {})
