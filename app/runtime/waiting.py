"""Runs that wait for people, in the runtime: what a run waits for, until when, and how it ends.

A run whose answer ends on calls that wait for a person (an approval, a plan, a question) is `waiting`,
not `succeeded`: its tools did not all run. Each waiting call gets a deadline, its trigger's timeout or
DECISION_TIMEOUT_MINUTES. Once the calls are decided a new run carries the decisions (it resumes); when
that run ends, `settle` ends the waiting runs it resumed, and the ones they resumed, with one status for
the chain: how the last run ended, or `denied` when a person denied a call, `expired` when no decision
came in time. Areas that tell people about waiting runs listen with `on_waiting` (app/waiting/).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from flask import Flask, current_app
from pydantic_ai.tools import DeferredToolRequests

from app.extensions import db
from app.models import Message, PendingCall, Run, Trigger, TriggerRun
from app.models.base import utcnow
from app.models.chat import WAITING, WAITING_FOR
from app.runtime import deferred

log = logging.getLogger(__name__)

# A chain that ended like this ends every run it resumed the same way: the work did not get done.
ENDED_BADLY = ("failed", "cancelled", "interrupted", "unfinished", "refused")
LISTENERS = "waiting_listeners"


def waiting_for(kinds: Iterable[str]) -> str | None:
    """Return what a run waits for, from the kinds of its waiting calls: an approval first, then a plan…"""
    present = set(kinds)
    return next((kind for kind in WAITING_FOR if kind in present), None)


def trigger_of(conversation_id: int) -> Trigger | None:
    """Return the trigger that started the conversation's runs, if a trigger did (and still exists)."""
    return db.session.scalar(
        db.select(Trigger).join(TriggerRun, TriggerRun.trigger_id == Trigger.id)
        .join(Run, Run.id == TriggerRun.run_id).where(Run.conversation_id == conversation_id).limit(1))


def timeout_minutes(trigger: Trigger | None, config: Any) -> int:
    """Return how long a call waits for a decision: the trigger's timeout, else the site's."""
    if trigger is not None and trigger.decision_timeout_minutes:
        return int(trigger.decision_timeout_minutes)
    return int(config["DECISION_TIMEOUT_MINUTES"])


def timeout_choice(trigger: Trigger | None, config: Any) -> str:
    """Return what applies when no decision came in time: the trigger's choice, else the site's."""
    return trigger.on_timeout if trigger is not None and trigger.on_timeout else config["DECISION_TIMEOUT_CHOICE"]


def patience(conversation_id: int, config: Any) -> timedelta:
    """Return how long the calls a run of this conversation leaves waiting wait for a decision."""
    return timedelta(minutes=timeout_minutes(trigger_of(conversation_id), config))


def store(requests: DeferredToolRequests, message: Message, meta: dict[str, Any], run_id: str, agent: Any,
          person: Any) -> str | None:
    """Store the calls a run ended on, with their deadline, and mark its message waiting; return what the run
    waits for (None when nothing was stored). Runs in `_finish`'s transaction."""
    pending = deferred.store_requests(requests, message, run_id, agent.id, agent.name, person.id, person.email,
                                      patience(message.conversation_id, current_app.config))
    kind = waiting_for(item["kind"] for item in pending)
    if kind is not None:
        meta["status"] = WAITING
    message.meta = {**meta, "pending": pending, **({"waiting_for": kind} if kind else {})}
    return kind


def chain_status(calls: Iterable[PendingCall], resumed_status: str) -> str:
    """Return how a waiting run ended, from its calls and how the run that carried their answers ended."""
    if resumed_status in ENDED_BADLY:
        return resumed_status
    calls = list(calls)
    if any(call.kind == "approval" and call.status == "answered" and not (call.answer or {}).get("approved")
           for call in calls):
        return "denied"
    if any(call.expired for call in calls):
        return "expired"
    return resumed_status


def settle(run_id: str, status: str, kind: str | None = None, now: datetime | None = None) -> None:
    """The run ended with `status`: end the waiting runs whose calls it carried, back along the chain.

    A run that ends waiting again leaves them waiting, for what it waits for. Runs in the transaction
    that stores the run's end; the caller commits.
    """
    now = now or utcnow()
    resumed_by, seen = run_id, {run_id}
    while True:
        waiting = [run for run in db.session.scalars(
            db.select(Run).join(PendingCall, PendingCall.run_id == Run.id)
            .where(PendingCall.resume_run_id == resumed_by, Run.status == WAITING).distinct())
            if run.id not in seen]
        if not waiting:
            return
        for run in waiting:
            seen.add(run.id)
            if status == WAITING:
                run.waiting_for = kind
            else:
                calls = db.session.scalars(db.select(PendingCall).where(PendingCall.run_id == run.id))
                end_waiting(run, chain_status(calls, status), now=now)
        resumed_by = waiting[0].id
        if status != WAITING:
            status = waiting[0].status


def end_waiting(run: Run, status: str, error: str | None = None, now: datetime | None = None) -> None:
    """End a waiting run with a status (and an error), its message saying the same; the caller commits."""
    run.status, run.waiting_for, run.finished_at = status, None, now or utcnow()
    if error:
        run.error = error
    for message in db.session.scalars(db.select(Message).where(Message.run_id == run.id,
                                                               Message.role == "assistant")):
        meta = {**(message.meta or {}), "status": status}
        meta.pop("waiting_for", None)
        if error:
            meta["error"] = error
        message.meta = meta


def on_waiting(app: Flask, listener: Callable[[Flask, str], None]) -> None:
    """Call `listener(app, run_id)` after a run of this app ended waiting (off the runtime loop, committed)."""
    listeners = app.extensions.setdefault(LISTENERS, [])
    if listener not in listeners:
        listeners.append(listener)


def announce(app: Flask, run_id: str) -> None:
    """Tell the listeners that a run ended waiting; a failing listener is logged and never breaks the run."""
    for listener in app.extensions.get(LISTENERS, []):
        try:
            listener(app, run_id)
        except Exception:  # telling people is a follow-up: the run waits whatever happens here
            log.exception("a listener of waiting runs failed for run %s", run_id)
