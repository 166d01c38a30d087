"""Scheduled triggers: one periodic job every minute fires the triggers whose cron time has come."""

from __future__ import annotations

import logging
from datetime import datetime

from croniter import croniter
from huey import crontab

from app.extensions import db, jobs
from app.models import Trigger
from app.models.base import utcnow
from app.triggers.runner import fire

log = logging.getLogger(__name__)


def check_cron(expression: str) -> str | None:
    """Return why a cron expression is not valid, or None."""
    if not expression or not croniter.is_valid(expression.strip()):
        return "Write a cron expression of five fields, such as “0 8 * * 1-5” (8:00 UTC on weekdays)."
    return None


def next_time(expression: str, after: datetime | None = None) -> datetime | None:
    """Return when a cron expression fires next (UTC), or None when it is not valid."""
    if check_cron(expression):
        return None
    return croniter(expression.strip(), after or utcnow()).get_next(datetime)


def is_due(trigger: Trigger, now: datetime) -> bool:
    """Tell whether the trigger's schedule had a time after its last firing (or its creation) up to now."""
    since = trigger.last_fired_at or trigger.created_at
    upcoming = next_time(trigger.cron or "", since)
    return upcoming is not None and upcoming <= now


def fire_due(now: datetime | None = None) -> int:
    """Fire every due scheduled trigger once (missed times are not caught up); returns how many fired."""
    now = now or utcnow()
    fired = 0
    query = db.select(Trigger).where(Trigger.kind == "schedule", Trigger.active.is_(True))
    triggers = db.session.scalars(query)
    for trigger in list(triggers):
        if not is_due(trigger, now) or not _claim(trigger, now):
            continue
        try:
            fire(trigger, {}, {"schedule": trigger.cron}, title=trigger.name)
            fired += 1
        except Exception:  # one broken schedule must not keep the others from firing
            db.session.rollback()
            log.exception("scheduled trigger %s failed to fire", trigger.id)
    return fired


def _claim(trigger: Trigger, now: datetime) -> bool:
    """Mark the trigger fired, unless another worker did so first."""
    previous = trigger.last_fired_at
    same = Trigger.last_fired_at.is_(None) if previous is None else Trigger.last_fired_at == previous
    claimed = db.session.execute(db.update(Trigger).where(Trigger.id == trigger.id, same)
                                 .values(last_fired_at=now)).rowcount
    db.session.commit()
    return claimed == 1


@jobs.periodic(crontab())
def check_schedules() -> None:
    """Every minute: fire the scheduled triggers that are due."""
    count = fire_due()
    if count:
        log.info("fired %s scheduled trigger(s)", count)
