"""Run events: stored with sequence numbers, fanned out to listeners in this process.

Any worker can serve any stream because events are stored; listeners in the same process are
woken at once, others notice within a poll interval.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from flask import Flask

from app.extensions import db
from app.models import RunEvent

TEXT_FLUSH_SECONDS = 0.05
LATEST_KEPT = 10_000
END = "end"

_conditions: dict[str, threading.Condition] = defaultdict(threading.Condition)
_latest: dict[str, int] = {}
_conditions_lock = threading.Lock()
_waiting: dict[str, int] = defaultdict(int)


def _condition(run_id: str) -> threading.Condition:
    with _conditions_lock:
        return _conditions[run_id]


def notify(run_id: str, seq: int) -> None:
    """Record the run's newest stored event and wake every listener of the run in this process."""
    condition = _condition(run_id)
    with condition:
        _latest[run_id] = seq
        condition.notify_all()


def wait_for_events(run_id: str, after: int, timeout: float) -> bool:
    """Sleep until the run has stored an event after `after`, or the timeout passes.

    Returns whether this process stored such an event (False after a timeout). Checking the newest
    sequence number under the lock closes the gap between a listener's query and its wait, so no
    notification is lost; listeners in other processes rely on the timeout.
    """
    condition = _condition(run_id)
    with condition:
        if _latest.get(run_id, 0) > after:
            return True
        _count_waiting(run_id, 1)
        try:
            condition.wait(timeout)
        finally:
            _count_waiting(run_id, -1)
        return _latest.get(run_id, 0) > after


def waiting(run_id: str) -> int:
    """Return how many listeners in this process are waiting for the run's next event right now."""
    with _conditions_lock:
        return _waiting.get(run_id, 0)


def _count_waiting(run_id: str, change: int) -> None:
    with _conditions_lock:
        _waiting[run_id] += change
        if not _waiting[run_id]:
            del _waiting[run_id]


def forget(run_id: str) -> None:
    """Drop the run's condition once it has ended; its newest sequence number stays for late listeners."""
    with _conditions_lock:
        _conditions.pop(run_id, None)
        while len(_latest) > LATEST_KEPT:
            _latest.pop(next(iter(_latest)))


def events_after(run_id: str, seq: int) -> list[RunEvent]:
    """Return the run's stored events after a sequence number, in order."""
    return list(db.session.scalars(
        db.select(RunEvent).where(RunEvent.run_id == run_id, RunEvent.seq > seq).order_by(RunEvent.seq)
    ))


class EventWriter:
    """Stores a run's events in order. Text deltas are coalesced for a few milliseconds."""

    def __init__(self, app: Flask, run_id: str, start_seq: int = 0) -> None:
        self.app = app
        self.run_id = run_id
        self.seq = start_seq
        self._text: list[str] = []
        self._last_flush = time.monotonic()

    def text(self, delta: str) -> None:
        if not delta:
            return
        self._text.append(delta)
        if time.monotonic() - self._last_flush >= TEXT_FLUSH_SECONDS:
            self.flush()

    def emit(self, type_: str, data: dict[str, Any]) -> None:
        self.flush()
        self._store([self._row(type_, data)])

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if self._text:
            self._store([self._pending_text()])

    def stage(self, *events: tuple[str, dict[str, Any]]) -> None:
        """Add events, after the text not yet stored, to the caller's open transaction.

        Call `published()` once the caller has committed.
        """
        rows = [self._pending_text()] if self._text else []
        rows += [self._row(type_, data) for type_, data in events]
        db.session.execute(db.insert(RunEvent), rows)

    def published(self) -> None:
        """Wake listeners after the caller committed staged events."""
        notify(self.run_id, self.seq)

    def _pending_text(self) -> dict[str, Any]:
        delta, self._text = "".join(self._text), []
        return self._row("text", {"delta": delta})

    def discard_text(self) -> None:
        self._text = []

    def _row(self, type_: str, data: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        return {"run_id": self.run_id, "seq": self.seq, "type": type_, "data": data}

    def _store(self, rows: list[dict[str, Any]]) -> None:
        with self.app.app_context():
            db.session.execute(db.insert(RunEvent), rows)
            db.session.commit()
        notify(self.run_id, self.seq)
