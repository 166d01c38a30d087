"""Request-side operations on conversations: start a chat, send a message, start unattended runs."""

from __future__ import annotations

from flask import current_app

from app.agents import runtime
from app.extensions import db
from app.models import Agent, Conversation, Message, Run, User
from app.models.base import utcnow


def start_conversation(user: User, agent: Agent, title: str | None = None, source: str = "chat") -> Conversation:
    """Create an empty conversation of the user with an agent; the caller commits."""
    conversation = Conversation(user_id=user.id, agent_id=agent.id, title=title or None, source=source)
    db.session.add(conversation)
    return conversation


def send_message(conversation: Conversation, user: User, text: str, launch: bool = True,
                 extras: dict | None = None) -> tuple[Message, Run]:
    """Store the user's message and a queued run in one commit, then start the run.

    `extras` (JSON, written by server code only: a resolved page context, a trigger's row) are kept
    on the message and handed to the run's skills; `extras["instructions"]` are added for that run.
    """
    run = Run(conversation_id=conversation.id, user_id=user.id, agent_id=conversation.agent_id,
              prompt=text, trigger=conversation.source if conversation.source != "copy" else "chat")
    db.session.add(run)
    db.session.flush()
    message = Message(conversation_id=conversation.id, role="user", content=text, run_id=run.id,
                      meta={"extras": extras} if extras else {})
    db.session.add(message)
    conversation.updated_at = utcnow()
    db.session.commit()
    if launch:
        runtime.launch(current_app._get_current_object(), run.id)
    return message, run


def active_run(conversation: Conversation) -> Run | None:
    """Return the conversation's run that is still queued or running, if any."""
    return db.session.scalar(
        db.select(Run).where(Run.conversation_id == conversation.id, Run.status.in_(("queued", "running")))
        .order_by(Run.created_at.desc()).limit(1)
    )


def run_unattended(agent: Agent, user: User, prompt: str, source: str, title: str | None = None,
                   timeout: float = 600.0) -> Run:
    """Run an agent with no listener (table events, webhooks, schedules) and wait for it to end."""
    conversation = start_conversation(user, agent, title=title, source=source)
    db.session.flush()
    _message, run = send_message(conversation, user, prompt, launch=False)
    run_id = run.id
    runtime.launch(current_app._get_current_object(), run_id).result(timeout)
    db.session.expire_all()
    return db.session.get(Run, run_id)
