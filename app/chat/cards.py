"""The cards of calls that wait for the user, as the chat's templates show them (template globals)."""

from __future__ import annotations

from flask_login import current_user

from app.chat import approvals
from app.extensions import db
from app.models import Conversation, Message, PendingCall

CARDS = {"approval": "chat/_approval.html", "plan": "chat/_plan.html", "question": "chat/_question.html"}


def pending_calls(message) -> list[PendingCall]:
    """Return the cards of a message of the signed-in user (none for snapshots and other people's chats)."""
    if not isinstance(message, Message) or not (message.meta or {}).get("pending"):
        return []
    return list(db.session.scalars(
        db.select(PendingCall).join(Conversation, Conversation.id == PendingCall.conversation_id)
        .where(PendingCall.message_id == message.id, Conversation.user_id == current_user.id)
        .order_by(PendingCall.id)))


def answered_by_run(message) -> list[PendingCall]:
    """Return the cards a message's run answered from a typed message, so the stream can update them."""
    if not isinstance(message, Message) or message.run_id is None or not (message.meta or {}).get("resumed"):
        return []
    return list(db.session.scalars(
        db.select(PendingCall).join(Conversation, Conversation.id == PendingCall.conversation_id)
        .where(PendingCall.resume_run_id == message.run_id, Conversation.user_id == current_user.id)))


def card_template(call: PendingCall) -> str:
    """Return the template of a call's card."""
    return CARDS.get(call.kind, "chat/_external.html")


def decision_label(call: PendingCall) -> str:
    """Say how a call was answered."""
    return approvals.decision_label(call)
