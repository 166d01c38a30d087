"""What the admins' list of runs shows about unattended runs: their trigger and their transcript."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from app.extensions import db
from app.models import Message, Notification, PendingCall, Run, TriggerRun
from app.models.chat import RUN_STATUSES, WAITING, WAITING_FOR
from app.models.tables import TRIGGER_SOURCES

PER_PAGE = 20


def unattended_runs(status: str | None = None, run_id: str | None = None, waiting_for: str | None = None):
    """Select the runs that triggers started, newest first; chats stay private to their owners.

    `waiting_for` (approval, plan, question) narrows to the runs waiting for that.
    """
    query = db.select(Run).where(Run.trigger.in_(TRIGGER_SOURCES)).order_by(Run.created_at.desc(), Run.id)
    if waiting_for in WAITING_FOR:
        query = query.where(Run.status == WAITING, Run.waiting_for == waiting_for)
    elif status in RUN_STATUSES:
        query = query.where(Run.status == status)
    if run_id:
        query = query.where(Run.id == run_id)
    return query


def run_details(runs: list[Run]) -> dict[str, Any]:
    """Return, for a page of runs, their transcripts by conversation and their trigger links by run."""
    conversation_ids = {run.conversation_id for run in runs}
    messages: dict[int, list[Message]] = defaultdict(list)
    if conversation_ids:
        query = db.select(Message).where(Message.conversation_id.in_(conversation_ids)).order_by(Message.id)
        for message in db.session.scalars(query):
            messages[message.conversation_id].append(message)
    run_ids = [run.id for run in runs]
    links = {link.run_id: link for link in db.session.scalars(
        db.select(TriggerRun).where(TriggerRun.run_id.in_(run_ids)))} if runs else {}
    # The calls that waited for people in each run's conversation (its resumptions' included), and who was told.
    calls: dict[int, list[PendingCall]] = defaultdict(list)
    notifications: dict[int, list[Notification]] = defaultdict(list)
    if conversation_ids:
        for call in db.session.scalars(db.select(PendingCall).where(PendingCall.conversation_id.in_(conversation_ids))
                                       .order_by(PendingCall.id)):
            calls[call.conversation_id].append(call)
        for notification, conversation_id in db.session.execute(
                db.select(Notification, Run.conversation_id).join(Run, Run.id == Notification.run_id)
                .where(Run.conversation_id.in_(conversation_ids)).order_by(Notification.id)):
            notifications[conversation_id].append(notification)
    return {"transcripts": messages, "links": links, "calls": calls, "notifications": notifications}


def failed_notifications() -> int:
    """Count the notifications that failed and were not sent since (shown to admins at the top of /runs)."""
    return db.session.scalar(db.select(db.func.count(Notification.id)).where(Notification.status == "failed")) or 0
