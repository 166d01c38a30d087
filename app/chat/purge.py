"""Deleting purges at once: transcripts, model context, run events, summaries; links stop working.

Deleted means deleted on disk too: a purge marks the stores it touched (`mark_purged`), and once the
transaction is committed each of them runs its `after_commit` step (`app.database.PurgeSteps`: SQLite
checkpoints its WAL, the vector store vacuums), so no copy of the text stays in their files.
"""

from __future__ import annotations

import logging
import time

from flask import current_app

from app.database import mark_purged, purge_steps
from app.extensions import db
from app.models import Conversation, Message, Run, RunEvent, Share, User
from app.models.base import utcnow
from app.models.chat import ACTIVE_STATUSES
from app.runtime.execution import request_stop, wait

log = logging.getLogger(__name__)

STOP_WAIT_SECONDS = 5.0

def purge_conversation(conversation: Conversation) -> None:
    """Delete a conversation's content for good; the remaining row keeps no text."""
    _stop_runs(conversation)
    run_ids = db.select(Run.id).where(Run.conversation_id == conversation.id)
    db.session.execute(db.delete(RunEvent).where(RunEvent.run_id.in_(run_ids)))
    db.session.execute(db.update(Run).where(Run.conversation_id == conversation.id)
                       .values(prompt=None, error=None))
    db.session.execute(db.delete(Message).where(Message.conversation_id == conversation.id))
    db.session.execute(db.delete(Share).where(Share.conversation_id == conversation.id))
    for purge in purge_steps(current_app).conversation:
        purge(conversation)
    conversation.title = None
    conversation.model_context = None
    conversation.deleted_at = utcnow()
    mark_purged()
    log.info("purged conversation %s", conversation.id)


def _stop_runs(conversation: Conversation) -> None:
    """Stop the conversation's active runs and wait for their end, so that none writes after the purge."""
    active = db.select(Run).where(Run.conversation_id == conversation.id, Run.status.in_(ACTIVE_STATUSES))
    runs = list(db.session.scalars(active))
    for run in runs:
        request_stop(run)
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    for run in runs:
        try:
            wait(run.id, timeout=STOP_WAIT_SECONDS)  # a run of this process ends within milliseconds
        except TimeoutError:
            break
    # A run of another process notices Stop within a second; past the deadline the runtime's own guard holds.
    still_active = active.with_only_columns(Run.id).limit(1)
    while runs and time.monotonic() < deadline and db.session.scalar(still_active) is not None:
        time.sleep(0.1)
    if runs:
        log.info("stopped %s run(s) of conversation %s before purging it", len(runs), conversation.id)


def purge_user_data(user: User) -> None:
    """Purge every conversation of a user and everything derived from them."""
    owned = db.select(Conversation).where(Conversation.user_id == user.id)
    for conversation in list(db.session.scalars(owned)):  # purging commits when it stops a run
        purge_conversation(conversation)
    for purge in purge_steps(current_app).user:
        purge(user)
    db.session.execute(db.delete(Share).where(Share.owner_id == user.id))
    mark_purged()
