"""Table events and webhooks to trigger firings."""

from __future__ import annotations

import logging
from typing import Any

from app.extensions import db
from app.models import DataTable, Run, Trigger
from app.tables.events import TableEvent
from app.triggers.runner import fire

log = logging.getLogger(__name__)


def on_table_event(event: TableEvent) -> None:
    """Fire the active triggers of the table that listen to this kind of change."""
    if event.run_id and _started_by_table_trigger(event.run_id):
        # A change made by an agent that a table event started fires nothing: no trigger loops.
        log.info("change of %s #%s by trigger run %s fires no trigger", event.table, event.row_id,
                 event.run_id)
        return
    triggers = db.session.scalars(
        db.select(Trigger).join(DataTable, DataTable.id == Trigger.table_id)
        .where(DataTable.name == event.table, Trigger.kind == "event", Trigger.active.is_(True))
        .order_by(Trigger.id))
    for trigger in list(triggers):
        if event.action not in (trigger.events or []):
            continue
        variables = {"row": event.row, "old": event.previous, "event": event.action,
                     "table": {"name": trigger.table.name, "label": trigger.table.label}}
        extras = {"table": event.table, "event": event.action, "row_id": event.row_id, "row": event.row}
        try:
            fire(trigger, variables, extras, title=f"{trigger.name}: {event.table} #{event.row_id}",
                 row_id=event.row_id if event.action != "delete" else None)
        except Exception:  # one broken trigger must not keep the others from firing
            db.session.rollback()
            log.exception("trigger %s failed to fire on %s #%s", trigger.id, event.table, event.row_id)


def on_webhook(trigger: Trigger, body: dict[str, Any]) -> Run | None:
    """Fire a webhook trigger with the JSON body it received."""
    return fire(trigger, {"body": body}, {"body": body}, title=trigger.name)


def _started_by_table_trigger(run_id: str) -> bool:
    return db.session.scalar(db.select(Run.trigger).where(Run.id == run_id)) == "table"
