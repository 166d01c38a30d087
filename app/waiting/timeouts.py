"""Timeouts: a call nobody decided in time gets the timeout's choice, applied by the scheduler.

Every minute (`check_waiting`, a periodic job in the one consumer that runs them) the calls past their
deadline are answered with the choice of the run's trigger (or DECISION_TIMEOUT_CHOICE for chats):

- `deny`: the call is denied ("No decision came within 24 h"), and the run resumes with that;
- `continue`: the call is not run and the agent is told to go on without it; the run resumes;
- `fail`: the run does not resume; it fails, saying no decision came in time.

Each is recorded as `expired` in the audit and on the card; the run ends `expired` (or `failed`). The
deadline is stored with the call and the answer is a conditional update, so a restart, several
consumers or a decision at the same moment change nothing: one answer wins. The same job resumes batches
that were decided but never resumed (the process stopped in between) and sends the notifications that
are still due. Time is passed in (`now`), so tests move it forward instead of waiting.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from flask import current_app
from huey import crontab

from app.chat.approvals import resume_when_ready
from app.extensions import db, jobs
from app.models import PendingCall, Run
from app.models.base import utcnow
from app.models.chat import ACTIVE_STATUSES, WAITING
from app.runtime.deferred import record_expiry
from app.runtime.waiting import end_waiting, settle, timeout_choice, timeout_minutes, trigger_of
from app.waiting import notify

log = logging.getLogger(__name__)


def waited(minutes: int) -> str:
    """Say a timeout in words: "24 h", "90 min"."""
    return f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"


def expiry_answer(kind: str, choice: str, minutes: int) -> dict[str, Any]:
    """Return what goes back to the model for a call that expired with this choice."""
    late = f"No decision came within {waited(minutes)}"
    if kind == "approval":
        message = {"deny": f"{late}: the call was denied.",
                   "continue": f"{late}, so this call was not run. Go on without this tool.",
                   "fail": f"{late}: the call was not run and the run failed."}[choice]
        return {"approved": False, "message": message, "choice": choice}
    result = {"deny": f"{late}: the user did not answer. Do not go on with what needed the answer.",
              "continue": f"{late}: the user did not answer. Go on without it, and say what you assumed.",
              "fail": f"{late}: the user did not answer, and the run failed."}[choice]
    return {"result": result, "choice": choice}


def expire_due(now: datetime | None = None) -> int:
    """Answer every call past its deadline with its timeout's choice; returns how many expired (commits)."""
    now = now or utcnow()
    due = list(db.session.scalars(db.select(PendingCall).where(
        PendingCall.status == "pending", PendingCall.expires_at.is_not(None), PendingCall.expires_at <= now)
        .order_by(PendingCall.id)))
    batches: dict[Any, list[PendingCall]] = {}
    for call in due:
        batches.setdefault(call.message_id or f"call-{call.id}", []).append(call)
    expired = 0
    for calls in batches.values():
        try:
            expired += _expire_batch(calls, now)
        except Exception:  # one broken batch must not keep the others waiting past their time
            db.session.rollback()
            log.exception("could not expire the calls %s", [call.id for call in calls])
    return expired


def _expire_batch(calls: list[PendingCall], now: datetime) -> int:
    trigger = trigger_of(calls[0].conversation_id)
    choice, minutes = timeout_choice(trigger, current_app.config), timeout_minutes(trigger, current_app.config)
    whose = f"the trigger {trigger.name}'s" if trigger is not None else "the site's"
    reason = f"No decision came within {waited(minutes)}; {whose} choice applied: {choice}."
    claimed = [call for call in calls if record_expiry(call, expiry_answer(call.kind, choice, minutes), reason, now)]
    db.session.commit()
    if not claimed:
        return 0
    log.info("%s call(s) of run %s expired; choice %s", len(claimed), claimed[0].run_id, choice)
    if choice == "fail":
        run = db.session.get(Run, claimed[0].run_id) if claimed[0].run_id else None
        if run is not None and run.status == WAITING:
            error = f"No decision came within {waited(minutes)}, and {whose} choice is to fail the run."
            end_waiting(run, "failed", error, now)
            settle(run.id, "failed", now=now)
            db.session.commit()
        return len(claimed)
    resume_when_ready(claimed[0])
    return len(claimed)


def resume_decided(now: datetime | None = None) -> int:
    """Resume the waiting runs whose calls all have an answer but no run carried them (a stop in between)."""
    open_batches = db.select(PendingCall.message_id).where(PendingCall.status == "pending",
                                                           PendingCall.message_id.is_not(None))
    busy = db.select(Run.conversation_id).where(Run.status.in_(ACTIVE_STATUSES))
    stranded = list(db.session.scalars(
        db.select(PendingCall).join(Run, Run.id == PendingCall.run_id).where(
            Run.status == WAITING, PendingCall.status.in_(("answered", "expired")),
            PendingCall.resume_run_id.is_(None), PendingCall.message_id.not_in(open_batches),
            PendingCall.conversation_id.not_in(busy)).order_by(PendingCall.id)))
    started, seen = 0, set()
    for call in stranded:
        if call.message_id in seen:
            continue
        seen.add(call.message_id)
        if (call.answer or {}).get("choice") == "fail":
            continue
        started += resume_when_ready(call) is not None
    return started


def check_due(now: datetime | None = None) -> dict[str, int]:
    """Apply the timeouts that are due, resume stranded batches, send the notifications still due."""
    now = now or utcnow()
    return {"expired": expire_due(now), "resumed": resume_decided(now), "planned": notify.plan_missed(now),
            "sent": notify.retry_due(now)}


@jobs.periodic(crontab())
def check_waiting() -> None:
    """Every minute: timeouts, stranded decisions and notifications of runs that wait for people."""
    done = check_due()
    if any(done.values()):
        log.info("waiting runs: %s", done)
