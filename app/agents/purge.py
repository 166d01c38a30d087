"""Deleting purges at once: transcripts, model context, run events, summaries; links stop working."""

from __future__ import annotations

import logging

from app.extensions import db
from app.models import Conversation, Message, Run, RunEvent, Share, User
from app.models.base import utcnow

log = logging.getLogger(__name__)

# Other modules (memories, compaction records, ...) register what they keep per conversation or user.
conversation_purgers: list = []
user_purgers: list = []


def purge_conversation(conversation: Conversation) -> None:
    """Delete a conversation's content for good; the remaining row keeps no text."""
    run_ids = db.select(Run.id).where(Run.conversation_id == conversation.id)
    db.session.execute(db.delete(RunEvent).where(RunEvent.run_id.in_(run_ids)))
    db.session.execute(db.update(Run).where(Run.conversation_id == conversation.id)
                       .values(prompt=None, error=None))
    db.session.execute(db.delete(Message).where(Message.conversation_id == conversation.id))
    db.session.execute(db.delete(Share).where(Share.conversation_id == conversation.id))
    for purge in conversation_purgers:
        purge(conversation)
    conversation.title = None
    conversation.model_context = None
    conversation.deleted_at = utcnow()
    log.info("purged conversation %s", conversation.id)


def purge_user_data(user: User) -> None:
    """Purge every conversation of a user and everything derived from them."""
    for conversation in db.session.scalars(db.select(Conversation).where(Conversation.user_id == user.id)):
        purge_conversation(conversation)
    for purge in user_purgers:
        purge(user)
    db.session.execute(db.delete(Share).where(Share.owner_id == user.id))
