"""Deleting purges at once: transcripts, model context, run events, summaries; links stop working.

Deleted means deleted on disk too: a purge marks the stores it touched (`mark_purged`), and once the
transaction is committed each of them runs its `after_purge` step (SQLite checkpoints its WAL, the
vector store vacuums), so no copy of the text stays in their files.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.orm import Session

from app.database import checkpoint_wal
from app.extensions import db
from app.models import Conversation, Message, Run, RunEvent, Share, User
from app.models.base import utcnow
from app.models.chat import ACTIVE_STATUSES

log = logging.getLogger(__name__)

STOP_WAIT_SECONDS = 5.0

# Other modules (memories, compaction records, ...) register what they keep per conversation or user.
conversation_purgers: list = []
user_purgers: list = []
# What a store does once a purge that touched it is committed, by store name.
after_purge: dict[str, Callable[[], None]] = {"database": checkpoint_wal}


def mark_purged(*stores: str) -> None:
    """Note that this transaction purges text from these stores (default: the database)."""
    db.session.info.setdefault("purged", set()).update(stores or ("database",))


@event.listens_for(Session, "after_commit")
def _after_purge(session: Session) -> None:
    for store in sorted(session.info.pop("purged", ())):
        step = after_purge.get(store)
        if step is not None:
            step()


@event.listens_for(Session, "after_soft_rollback")
def _purge_rolled_back(session: Session, _previous) -> None:
    session.info.pop("purged", None)


def purge_conversation(conversation: Conversation) -> None:
    """Delete a conversation's content for good; the remaining row keeps no text."""
    _stop_runs(conversation)
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
    mark_purged()
    log.info("purged conversation %s", conversation.id)


def _stop_runs(conversation: Conversation) -> None:
    """Stop the conversation's active runs and wait for their end, so that none writes after the purge."""
    from app.runtime.execution import request_stop, wait  # here: the runtime imports this module's registries

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
    for purge in user_purgers:
        purge(user)
    db.session.execute(db.delete(Share).where(Share.owner_id == user.id))
    mark_purged()
