"""The assistant panel's send: one message to a panel's agent with the page context, for every page."""

from __future__ import annotations

from dataclasses import dataclass

from flask import abort

from app.assistance.context import ContextRejected, parse_context_text
from app.assistance.gate import assistant_enabled
from app.chat import turns
from app.chat.conversations import get_own_conversation
from app.extensions import db
from app.models import Agent, Conversation, User

PANEL_AGENT = "Workspace assistant"  # the seeded agent (app/seed.py); an admin may edit, not rename, it


@dataclass
class PanelSend:
    """What a panel shows after a send: the conversation (None before the first message) and any error."""

    conversation: Conversation | None
    error: str | None
    sent: bool = False


def workspace_agent(user: User) -> Agent | None:
    """Return the Workspace assistant when the user may chat with it and the assistant is switched on."""
    if not user.is_authenticated or user.role == "guest" or not assistant_enabled():
        return None
    agent = db.session.scalar(db.select(Agent).where(Agent.name == PANEL_AGENT))
    return agent if agent is not None and agent.usable_by(user) else None


def send_from_panel(user: User, agent: Agent, source: str, text: str, conversation_id: int | None,
                    context_text: str | None) -> PanelSend:
    """Check the message and its page context, then send it in the panel's conversation (started if needed).

    The context is resolved for the user's role before the agent sees it (app/assistance/context.py);
    another agent's conversation id is a 404, as any conversation the user does not own.
    """
    text = text.strip()
    conversation = None
    if conversation_id:
        conversation = get_own_conversation(conversation_id, *turns.FOR_TURN)
        if conversation.agent_id != agent.id:
            abort(404)
    error = turns.message_error(text, conversation)
    if error is not None:
        return PanelSend(conversation, error)
    try:
        context = parse_context_text(context_text, user.role)
    except ContextRejected as rejected:
        return PanelSend(conversation, str(rejected))
    if conversation is None:
        conversation = turns.start_conversation(user, agent, source=source)
        db.session.flush()
    try:
        turns.send_message(conversation, user, text, extras=context.as_extras() or None)
    except turns.RunInProgress:  # another send started a run a moment ago
        return PanelSend(conversation, turns.WAIT)
    except turns.TooManyRuns as refused:  # nothing stored: a conversation started here is gone too
        return PanelSend(conversation if conversation_id else None, str(refused))
    return PanelSend(conversation, None, sent=True)
