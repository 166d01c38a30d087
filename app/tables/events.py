"""Table events: every insert, update and delete of a row is told to the listeners after it commits.

Listeners (the triggers) are registered per app in `app.extensions["table_events"]`. A listener
that fails is logged and never undoes or blocks the change that was already committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app

log = logging.getLogger(__name__)

ACTIONS = ("insert", "update", "delete")


@dataclass(frozen=True)
class TableEvent:
    """A committed change of one row; `row` and `previous` hold JSON-ready values."""

    table: str
    action: str
    row_id: int
    row: dict[str, Any]
    previous: dict[str, Any] | None = None
    user_id: int | None = None
    # The agent run that made the change, if an agent did.
    run_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Listener = Callable[[TableEvent], None]


def subscribe(app: Flask, listener: Listener) -> None:
    """Call the listener after every committed change of a row in this app."""
    listeners = app.extensions.setdefault("table_events", [])
    if listener not in listeners:
        listeners.append(listener)


def emit(event: TableEvent) -> None:
    """Tell every listener about a committed change; a failing listener is logged, not raised."""
    for listener in current_app.extensions.get("table_events", []):
        try:
            listener(event)
        except Exception:  # the row is committed already: a trigger must never undo or block it
            log.exception("table event listener %s failed on %s %s #%s",
                          getattr(listener, "__name__", listener), event.table, event.action, event.row_id)
