"""Telling people that a run waits for them: an e-mail (SMTP) and a trigger's notification webhook.

An outbox: when calls start waiting, `plan` marks them notified and writes one `Notification` per
recipient in one transaction; `deliver` sends one and records how it went. A failure (an SMTP server that
is down, a webhook that answers 500 or is refused by the outbound guard) is logged and kept on the row,
which admins see on the run; the scheduler retries it while the calls wait (MAX_ATTEMPTS), and a restart
loses nothing, since what is not sent is still a row. The calls wait whatever happens here.

Neither channel carries the tools' arguments (nor a question's or a plan's text, which are arguments)
unless the admin allowed it: NOTIFY_ARGUMENTS for e-mails, a trigger's "notifications carry the
arguments" for its webhook and its e-mails.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from datetime import datetime, timedelta
from email.message import EmailMessage
from typing import Any

import httpx2
from flask import Flask, current_app

from app.chat.call_summaries import call_summary
from app.extensions import db, jobs
from app.guards.outbound import OutboundRefused, fetch_sync, policy_from_config
from app.models import Notification, PendingCall, Run, Trigger, User
from app.models.base import utcnow
from app.runtime.waiting import trigger_of
from app.waiting.deciders import deciders

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
RETRY_AFTER = timedelta(minutes=5)  # between two tries of a failed notification
ERROR_CHARS = 500


def queue_for_run(app: Flask, run_id: str) -> None:
    """Plan the notifications of a run that ended waiting and queue each for sending (the runtime's listener)."""
    with app.app_context():
        for notification_id in plan(run_id):
            deliver_notification.delay(notification_id)


def plan(run_id: str, now: datetime | None = None) -> list[int]:
    """Write the notifications for the run's calls not yet notified and mark them; return their ids (commits)."""
    now = now or utcnow()
    calls = list(db.session.scalars(db.select(PendingCall).where(
        PendingCall.run_id == run_id, PendingCall.status == "pending", PendingCall.notified_at.is_(None))))
    if not calls:
        return []
    claimed = db.session.execute(db.update(PendingCall).where(
        PendingCall.id.in_([call.id for call in calls]), PendingCall.notified_at.is_(None))
        .values(notified_at=now).execution_options(synchronize_session=False)).rowcount
    if claimed != len(calls):  # another worker planned them
        db.session.rollback()
        return []
    conversation = calls[0].conversation
    trigger = trigger_of(conversation.id)
    unattended = trigger is not None
    rows: list[Notification] = []
    if current_app.config.get("SMTP_HOST"):
        people: dict[int, User] = {}
        for call in calls:
            for person in deciders(call):
                # The owner of a chat sees the card there; the people of an unattended run are told.
                if person.id != conversation.user_id or unattended:
                    people.setdefault(person.id, person)
        rows += [Notification(run_id=run_id, message_id=calls[0].message_id, channel="email",
                              recipient=person.email, user_id=person.id, trigger_id=trigger.id if trigger else None)
                 for person in people.values()]
    if trigger is not None and trigger.notify_url:
        rows.append(Notification(run_id=run_id, message_id=calls[0].message_id, channel="webhook",
                                 recipient=f"trigger {trigger.id}", trigger_id=trigger.id))
    db.session.add_all(rows)
    db.session.commit()
    return [row.id for row in rows]


@jobs.task()
def deliver_notification(notification_id: int) -> None:
    """Send one planned notification (a job)."""
    deliver(notification_id)


def deliver(notification_id: int, now: datetime | None = None) -> bool:
    """Send a notification and record the outcome; returns whether it went out (commits)."""
    now = now or utcnow()
    row = db.session.get(Notification, notification_id)
    if row is None or row.status == "sent":
        return row is not None
    calls = _waiting_calls(row)
    if not calls:  # decided or expired meanwhile: nothing left to tell (a failure's error stays on the row)
        row.status = "skipped"
        db.session.commit()
        return False
    # Claim this attempt and commit before sending: no transaction (nor SQLite's write turn) is held while
    # the mail server or the webhook answers, and of two deliveries of one row (its job and the retry
    # job) only the one whose claim lands sends.
    claimed = db.session.execute(db.update(Notification).where(
        Notification.id == row.id, Notification.attempts == row.attempts, Notification.status != "sent",
    ).values(attempts=row.attempts + 1, attempted_at=now).execution_options(synchronize_session=False))
    db.session.commit()
    if claimed.rowcount != 1:
        return False
    try:
        if row.channel == "email":
            _send_email(row, calls)
        else:
            _call_webhook(row, calls)
    except (smtplib.SMTPException, OSError, httpx2.HTTPError, OutboundRefused, WebhookRefused) as error:
        row.status, row.error = "failed", f"{type(error).__name__}: {error}"[:ERROR_CHARS]
        db.session.commit()
        log.warning("notification %s (%s) of run %s failed, try %s: %s", row.id, row.channel, row.run_id,
                    row.attempts, row.error)
        return False
    row.status, row.error, row.sent_at = "sent", None, now
    db.session.commit()
    return True


def retry_due(now: datetime | None = None) -> int:
    """Send the notifications still pending or failed (under MAX_ATTEMPTS, after RETRY_AFTER); returns how many."""
    now = now or utcnow()
    due = list(db.session.scalars(db.select(Notification.id).where(
        Notification.status.in_(("pending", "failed")), Notification.attempts < MAX_ATTEMPTS,
        db.or_(Notification.attempted_at.is_(None), Notification.attempted_at <= now - RETRY_AFTER))))
    return sum(1 for notification_id in due if deliver(notification_id, now))


def plan_missed(now: datetime | None = None) -> int:
    """Plan the notifications of waiting calls that were never planned (the process stopped first)."""
    now = now or utcnow()
    run_ids = list(db.session.scalars(db.select(PendingCall.run_id).join(Run, Run.id == PendingCall.run_id).where(
        PendingCall.status == "pending", PendingCall.notified_at.is_(None), Run.status == "waiting").distinct()))
    planned = [notification_id for run_id in run_ids for notification_id in plan(run_id, now)]
    for notification_id in planned:
        deliver(notification_id, now)
    return len(planned)


class WebhookRefused(Exception):
    """The notification webhook answered with an error status."""


def _waiting_calls(row: Notification) -> list[PendingCall]:
    batch = PendingCall.message_id == row.message_id if row.message_id else PendingCall.run_id == row.run_id
    calls = list(db.session.scalars(db.select(PendingCall).where(batch, PendingCall.status == "pending")
                                    .order_by(PendingCall.id)))
    if row.channel == "email" and row.user_id is not None:
        person = db.session.get(User, row.user_id)
        calls = [call for call in calls if person is not None and person in deciders(call)]
    return calls


def _with_arguments(row: Notification) -> bool:
    trigger = db.session.get(Trigger, row.trigger_id) if row.trigger_id else None
    if trigger is not None and trigger.notify_arguments:
        return True
    return row.channel == "email" and bool(current_app.config.get("NOTIFY_ARGUMENTS"))


def _inbox_url() -> str | None:
    base = current_app.config.get("PUBLIC_URL")
    return f"{str(base).rstrip('/')}/approvals/" if base else None


def _about(calls: list[PendingCall]) -> dict[str, Any]:
    conversation = calls[0].conversation
    trigger = trigger_of(conversation.id)
    return {"agent": conversation.agent.name if conversation.agent else "An agent",
            "trigger": {"id": trigger.id, "name": trigger.name} if trigger else None,
            "owner": conversation.user.email if conversation.user else None}


def _send_email(row: Notification, calls: list[PendingCall]) -> None:
    config = current_app.config
    about, arguments = _about(calls), _with_arguments(row)
    message = EmailMessage()
    message["From"] = config.get("SMTP_FROM") or f"skilldesk@{config['SMTP_HOST']}"
    message["To"] = row.recipient
    message["Subject"] = f"Skilldesk: {about['agent']} waits for your decision"
    started = f"started by the trigger {about['trigger']['name']}" if about["trigger"] else \
        f"in a chat of {about['owner']}"
    lines = [f"{about['agent']} ({started}) waits for a decision:", ""]
    for call in calls:
        summary = call_summary(call, arguments=arguments)
        what = {"approval": f"run the tool {call.tool_name}", "plan": "approve a plan",
                "question": "answer a question"}.get(call.kind, f"a result of {call.tool_name}")
        until = f" (until {call.expires_at:%Y-%m-%d %H:%M} UTC)" if call.expires_at else ""
        lines.append(f"- {what}, waiting since {call.created_at:%Y-%m-%d %H:%M} UTC{until}")
        for key in ("arguments", "question", "options", "plan"):
            if key in summary:
                lines.append(f"  {key}: {summary[key]}")
    url = _inbox_url()
    lines += ["", f"Decide in your inbox: {url}" if url else "Decide under Approvals in Skilldesk."]
    message.set_content("\n".join(lines))
    security, timeout = config["SMTP_SECURITY"], float(config["SMTP_TIMEOUT_SECONDS"])
    smtp_class = smtplib.SMTP_SSL if security == "ssl" else smtplib.SMTP
    options: dict[str, Any] = {"context": ssl.create_default_context()} if security == "ssl" else {}
    with smtp_class(config["SMTP_HOST"], int(config["SMTP_PORT"]), timeout=timeout, **options) as smtp:
        if security == "starttls":
            smtp.starttls(context=ssl.create_default_context())
        if config.get("SMTP_USERNAME"):
            smtp.login(config["SMTP_USERNAME"], config.get("SMTP_PASSWORD") or "")
        smtp.send_message(message)


def _call_webhook(row: Notification, calls: list[PendingCall]) -> None:
    trigger = db.session.get(Trigger, row.trigger_id) if row.trigger_id else None
    if trigger is None or not trigger.notify_url:
        raise WebhookRefused("the trigger no longer has a notification webhook")
    arguments, about = _with_arguments(row), _about(calls)
    run = db.session.get(Run, row.run_id)
    payload = {"event": "run.waiting", "run": {"id": row.run_id, "status": run.status if run else None,
                                               "waitingFor": run.waiting_for if run else None},
               "trigger": about["trigger"], "agent": about["agent"], "inbox": _inbox_url(),
               "calls": [_camel(call_summary(call, arguments=arguments)) for call in calls]}
    response = fetch_sync("POST", trigger.notify_url, policy=policy_from_config(current_app.config), json=payload)
    if response.status >= 400:
        raise WebhookRefused(f"the webhook answered {response.status}")


def _camel(summary: dict[str, Any]) -> dict[str, Any]:
    names = {"created_at": "createdAt", "expires_at": "expiresAt"}
    return {names.get(key, key): value for key, value in summary.items() if key != "decision"}
