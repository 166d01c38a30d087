"""The one writer of run events in a process: every run's waiting events stored in one commit, off the runtime loop.

Event writers hand their rows here and go on at once, so the runtime loop never waits for the database
(nor for SQLite's write lock, which a burst of sends holds in turn). The thread takes everything that
waits, stores it in one transaction (on PostgreSQL the wake-up is part of it), commits, then hands the
events to the runs' followers in this process and wakes the other processes, one message per batch.
A run's own end is stored by the run in the transaction of its message, after `settle()`: its earlier
events are committed first, so the sequence numbers become visible in order.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask

from app.extensions import db
from app.models import RunEvent
from app.runtime import feeds, wakeups

log = logging.getLogger(__name__)

# How often a batch the database refused (locked past its timeout, gone a moment) is tried again.
ATTEMPTS = 5
SETTLE_TIMEOUT_SECONDS = 30.0


@dataclass
class Pending:
    """What one run's writer still has on its way to the database."""

    queued: int = 0
    waiters: list[Callable[[], None]] = field(default_factory=list)


class EventStore:
    """A daemon thread and its queue of (app, run id, rows) to store."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._queue: list[tuple[Flask, str, list[dict[str, Any]]]] = []
        self._pending: dict[str, Pending] = {}
        self._changed = threading.Condition()
        threading.Thread(target=self._serve, name="skilldesk-event-store", daemon=True).start()
        atexit.register(self.drain)  # a command that emitted events and exits: they are stored first

    def drain(self, timeout: float = SETTLE_TIMEOUT_SECONDS) -> bool:
        """Block until nothing waits to be stored (False after the timeout)."""
        if os.getpid() != self.pid:
            return True  # a forked child's copy: its thread stayed in the parent
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def put(self, app: Flask, run_id: str, rows: list[dict[str, Any]]) -> None:
        """Queue a run's rows (in sequence order) to be stored and announced; returns at once."""
        with self._changed:
            self._queue.append((app, run_id, rows))
            self._pending.setdefault(run_id, Pending()).queued += 1
            self._changed.notify_all()

    def settle(self, run_id: str, timeout: float = SETTLE_TIMEOUT_SECONDS) -> bool:
        """Block until every row queued for the run is stored (or given up); False after the timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while run_id in self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    async def settled(self, run_id: str) -> None:
        """Wait, without blocking the runtime loop, until every row queued for the run is stored."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        with self._changed:
            pending = self._pending.get(run_id)
            if pending is None:
                return
            pending.waiters.append(lambda: loop.call_soon_threadsafe(_resolve, done))
        await done

    def _serve(self) -> None:
        while True:
            with self._changed:
                while not self._queue:
                    self._changed.wait()
                batch, self._queue = self._queue, []
            try:
                self._store(batch)
            except Exception:  # never let the thread die: the next batches must still be stored
                log.exception("run events could not be stored")
            self._done(batch)

    def _store(self, batch: list[tuple[Flask, str, list[dict[str, Any]]]]) -> None:
        by_app: dict[int, tuple[Flask, list[tuple[str, list[dict[str, Any]]]]]] = {}
        for app, run_id, rows in batch:
            by_app.setdefault(id(app), (app, []))[1].append((run_id, rows))
        for app, items in by_app.values():
            if not self._commit(app, items):
                for item in items:  # one run's rows the database refuses (its run deleted) spoil no other's
                    self._commit(app, [item], attempts=1)

    def _commit(self, app: Flask, items: list[tuple[str, list[dict[str, Any]]]], attempts: int = ATTEMPTS) -> bool:
        rows = [row for _run_id, run_rows in items for row in run_rows]
        newest: dict[str, int] = {}
        for row in rows:
            newest[row["run_id"]] = row["seq"]
        channel: wakeups.Wakeups = app.extensions["wakeups"]
        messages = wakeups.event_messages(newest)
        feeds.storing(newest)
        for attempt in range(attempts):
            try:
                with app.app_context():
                    db.session.execute(db.insert(RunEvent), rows)
                    for message in messages:
                        channel.stage(db.session, message)
                    db.session.commit()
                break
            except Exception:
                with app.app_context():
                    db.session.rollback()
                if attempt + 1 == attempts:
                    log.warning("%d run event(s) of %d run(s) could not be stored", len(rows), len(newest),
                                exc_info=True)
                    return False
                time.sleep(0.05 * 2 ** attempt)
        for message in messages:
            channel.committed(message)
        for run_id, run_rows in items:
            feeds.deliver(run_id, [feeds.StoredEvent(row["seq"], row["type"], row["data"]) for row in run_rows])
        return True

    def _done(self, batch: list[tuple[Flask, str, list[dict[str, Any]]]]) -> None:
        wake: list[Callable[[], None]] = []
        with self._changed:
            for _app, run_id, _rows in batch:
                pending = self._pending[run_id]
                pending.queued -= 1
                if not pending.queued:
                    del self._pending[run_id]
                    wake += pending.waiters
            self._changed.notify_all()
        for waiter in wake:
            waiter()


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


_store: EventStore | None = None
_store_lock = threading.Lock()


def event_store() -> EventStore:
    """Return this process's event store, starting its thread on first use (and again after a fork)."""
    global _store
    with _store_lock:
        if _store is None or _store.pid != os.getpid():
            _store = EventStore()
        return _store
