"""A run's followers in this process: each stored event is handed to them from memory.

The event writer (`app/runtime/events.py`) stores a batch of events, commits, then `deliver`s them to
every follower of the run in its process, into a bounded queue. A follower reads the database only
when it must: on its first read (a replay after `Last-Event-ID`), when a wake-up says another process
stored events (`notify`, one read for the whole batch of wake-ups that came meanwhile), when its queue
overflowed or showed a gap, and at a slow safety re-check. So no event is ever dropped: the database
stays the record, memory is the fast path.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from app.extensions import db
from app.models import RunEvent

# Events a follower may have waiting; past it the queue is dropped and the follower reads the database
# from where it was (a client that reads slowly must not make the writer hold its events in memory).
QUEUE_BOUND = 512
LATEST_KEPT = 10_000

_lock = threading.Lock()
_followers: dict[str, list[Follower]] = {}  # by run id
_latest: OrderedDict[str, int] = OrderedDict()  # the newest sequence number known per run
_storing: OrderedDict[str, int] = OrderedDict()  # the newest sequence number this process is committing per run


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """A stored run event as followers and encoders read it."""

    seq: int
    type: str
    data: dict[str, Any]


def events_after(run_id: str, seq: int) -> list[StoredEvent]:
    """Return the run's stored events after a sequence number, in order (one indexed query, no ORM objects)."""
    rows = db.session.execute(db.select(RunEvent.seq, RunEvent.type, RunEvent.data)
                              .where(RunEvent.run_id == run_id, RunEvent.seq > seq).order_by(RunEvent.seq))
    return [StoredEvent(row.seq, row.type, row.data or {}) for row in rows]


class Follower:
    """One stream's view of a run: what was stored after `after`, in order, each event once.

    Use it as a context manager (it joins the run's followers on enter, before its first read, so no
    event falls between that read and the subscription) and call `next()` until the end event.
    """

    def __init__(self, run_id: str, after: int, recheck_seconds: float) -> None:
        self.run_id = run_id
        self.after = after
        self.recheck_seconds = recheck_seconds
        self._pending: list[StoredEvent] = []
        self._look = True  # read the database: first read, overflow, gap, a wake-up from another process
        self._waiting = False
        self._woken = threading.Condition(_lock)
        self._read_at = 0.0

    def __enter__(self) -> Follower:
        with _lock:
            _followers.setdefault(self.run_id, []).append(self)
        return self

    def __exit__(self, *_exc) -> None:
        with _lock:
            followers = _followers.get(self.run_id, [])
            if self in followers:
                followers.remove(self)
            if not followers:
                _followers.pop(self.run_id, None)

    def look_again(self) -> None:
        """Read the database at the next `next()` (the run ended: make sure nothing is left unread)."""
        with _lock:
            self._look = True

    def wait(self, timeout: float) -> bool:
        """Sleep until there is news for this follower or the timeout passes; return whether there is news.

        Call it with no database connection checked out: it can sleep for the whole timeout.
        """
        with _lock:
            if not self._pending and not self._look:
                self._waiting = True
                try:
                    self._woken.wait(timeout)
                finally:
                    self._waiting = False
            return bool(self._pending or self._look)

    def next(self, timeout: float) -> list[StoredEvent]:
        """Return the events after the last ones returned: from memory, else from the database.

        Waits up to `timeout` when there is nothing yet; an empty list means a quiet timeout. A read from
        the database leaves its connection checked out: the caller releases it (`db.session.remove()`)
        before it yields or waits.
        """
        news = self.wait(timeout)
        with _lock:
            pending, look = self._pending, self._look
            self._pending, self._look = [], False
        # Events a database read already returned may also have been delivered meanwhile: each goes out once.
        events = [event for event in pending if event.seq > self.after]
        if not look and events and events[0].seq != self.after + 1:
            look = True  # a gap: what is missing is in the database
        if not look and not news and time.monotonic() - self._read_at >= self.recheck_seconds:
            look = True  # the safety re-check, in case a wake-up from another process was lost
        if look:
            events = events_after(self.run_id, self.after)
        if events or look:
            self._read_at = time.monotonic()
        if events:
            self.after = events[-1].seq
        return events


def follower(run_id: str, after: int, recheck_seconds: float) -> Follower:
    """Return a follower of the run for a stream (enter it to join the run's followers)."""
    return Follower(run_id, after, recheck_seconds)


def wait_for_news(run_id: str, after: int, timeout: float) -> bool:
    """Sleep until the run has news after `after` (stored here, or announced from elsewhere), or the timeout."""
    with Follower(run_id, after, timeout) as waiter:
        with _lock:
            waiter._look = _latest.get(run_id, 0) > after
        return waiter.wait(timeout)


def deliver(run_id: str, events: list[StoredEvent]) -> None:
    """Hand events just committed by this process to the run's followers here, in order."""
    if not events:
        return
    with _lock:
        _note_latest(run_id, events[-1].seq)
        for each in _followers.get(run_id, ()):
            if each._look or len(each._pending) + len(events) > QUEUE_BOUND:
                each._pending, each._look = [], True  # it reads the database from where it is
            else:
                each._pending.extend(events)
            each._woken.notify()


def storing(newest: dict[str, int]) -> None:
    """Note that this process is committing the runs' events up to these numbers (before the commit).

    Its own wake-up can come back on the channel before `deliver` ran (PostgreSQL's NOTIFY reaches our
    listener as the commit returns): it then announces nothing new, and no follower reads the database.
    """
    with _lock:
        for run_id, seq in newest.items():
            _keep_newest(_storing, run_id, seq)


def notify(run_id: str, seq: int) -> None:
    """A wake-up from another process: the run stored events up to `seq`; its followers here read them once."""
    with _lock:
        if max(_latest.get(run_id, 0), _storing.get(run_id, 0)) >= seq:
            return  # nothing new (our own announcement, come back on the channel)
        _note_latest(run_id, seq)
        for each in _followers.get(run_id, ()):
            each._look = True
            each._woken.notify()


def look_again_everywhere() -> None:
    """Wake-ups may have been missed (a listener reconnected): every follower here reads the database once."""
    with _lock:
        for followers in _followers.values():
            for each in followers:
                each._look = True
                each._woken.notify()


def latest(run_id: str) -> int:
    """Return the newest sequence number this process knows the run stored (0 if none)."""
    with _lock:
        return _latest.get(run_id, 0)


def waiting(run_id: str) -> int:
    """Return how many followers of the run in this process are waiting for its next event right now."""
    with _lock:
        return sum(1 for each in _followers.get(run_id, ()) if each._waiting)


def _note_latest(run_id: str, seq: int) -> None:
    _keep_newest(_latest, run_id, seq)


def _keep_newest(numbers: OrderedDict[str, int], run_id: str, seq: int) -> None:
    if numbers.get(run_id, 0) < seq:
        numbers[run_id] = seq
        numbers.move_to_end(run_id)
        while len(numbers) > LATEST_KEPT:
            numbers.popitem(last=False)
