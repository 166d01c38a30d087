"""What the admins' list of runs shows about unattended runs: their trigger and their transcript."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from app.extensions import db
from app.models import Message, Run, TriggerRun
from app.models.chat import RUN_STATUSES
from app.models.tables import TRIGGER_SOURCES

PER_PAGE = 20


def unattended_runs(status: str | None = None, run_id: str | None = None):
    """Select the runs that triggers started, newest first; chats stay private to their owners."""
    query = db.select(Run).where(Run.trigger.in_(TRIGGER_SOURCES)).order_by(Run.created_at.desc(), Run.id)
    if status in RUN_STATUSES:
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
    links = {link.run_id: link for link in db.session.scalars(
        db.select(TriggerRun).where(TriggerRun.run_id.in_([run.id for run in runs])))} if runs else {}
    return {"transcripts": messages, "links": links}
