"""Runs cut short by the server stopping: interrupted at shutdown, or found unfinished at start.

Either way the run ends `interrupted`, the user's message stays, and the chat says what happened.
"""

from __future__ import annotations

import concurrent.futures
import logging

from flask import Flask

from app.extensions import db
from app.models import Message, Run
from app.models.base import utcnow
from app.models.chat import ACTIVE_STATUSES
from app.runtime import execution

log = logging.getLogger(__name__)

SHUTDOWN_WAIT_SECONDS = 5.0


def interrupt_here(app: Flask, timeout: float = SHUTDOWN_WAIT_SECONDS) -> int:
    """Stop the runs of this process for a shutdown and wait for them to store what they had.

    A run that does not end in time, or whose end could not be stored, is marked interrupted in the
    database without its partial text, so none is left `running`. Returns how many runs were interrupted.
    """
    futures = execution.interrupt_all()
    concurrent.futures.wait(futures.values(), timeout)
    late = [run_id for run_id, future in futures.items() if not _stored(future)]
    if futures:
        with app.app_context():  # only runs still queued or running are touched: the stored ones stay as they are
            mark_interrupted(list(futures))
    if futures:
        log.info("interrupted %d run(s) for the shutdown (%d not stored in time)", len(futures), len(late))
    return len(futures)


def _stored(future: concurrent.futures.Future) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def recover_interrupted() -> int:
    """Mark every run still queued or running as interrupted (no server runs them any more)."""
    return mark_interrupted(None)


def mark_interrupted(run_ids: list[str] | None) -> int:
    """Mark the given active runs (all of them for None) interrupted, each with an assistant message saying so."""
    query = db.select(Run).where(Run.status.in_(ACTIVE_STATUSES))
    if run_ids is not None:
        query = query.where(Run.id.in_(run_ids))
    runs = list(db.session.scalars(query.with_for_update()))
    for run in runs:
        run.status, run.finished_at, run.error = "interrupted", utcnow(), execution.INTERRUPTED
        db.session.add(Message(conversation_id=run.conversation_id, role="assistant", content="",
                               run_id=run.id, meta={"status": "interrupted", "error": run.error}))
    db.session.commit()
    return len(runs)
