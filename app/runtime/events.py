"""Run events: stored with sequence numbers, then handed to every follower of the run.

Any worker can serve any stream because events are stored. One thread per process stores the events of
every run, off the runtime loop (`app/runtime/event_store.py`), then hands them to the run's followers in
this process from memory (`app/runtime/feeds.py`); followers in other processes are woken through the
app's wake-ups (`app/runtime/wakeups.py`: PostgreSQL LISTEN/NOTIFY, Redis pub/sub, or the serving
machine's own channel) and read the database once per batch of wake-ups. Stop travels the same way, so
it reaches a run in any process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from flask import Flask, current_app

from app.extensions import db
from app.models import RunEvent
from app.runtime import feeds, wakeups
from app.runtime.event_store import event_store
from app.runtime.feeds import Follower, StoredEvent, events_after, waiting

__all__ = ["EventWriter", "Follower", "StoredEvent", "events_after", "follow", "waiting"]

TEXT_FLUSH_SECONDS = 0.05
END = "end"
# What a run changes on the chat page beside its answer: a notice it stored (data: message_id), and the
# chat's header (the agent after a hand-over). app/chat/stream.py renders them as out-of-band fragments.
NOTICE = "notice"
HEADER = "header"
# The model is writing the answer, whose text is held until it is checked (no data, once per run).
WRITING = "writing"
# How long a follower sleeps before it looks at the database anyway: every second when only this
# process can wake it, rarely when wake-ups cross processes (a lost message then costs this long).
RECHECK_SECONDS = 1.0
SAFETY_RECHECK_SECONDS = 5.0

_stop_handlers: list[Callable[[str], None]] = []
log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    """Choose how this app's events and Stop requests reach other processes (LIVE_EVENTS)."""
    with app.app_context():
        url = db.engine.url
    app.extensions["wakeups"] = wakeups.for_app(app, url, deliver)


def on_stop(handler: Callable[[str], None]) -> None:
    """Call `handler(run_id)` when Stop is requested for a run, from this process or another."""
    if handler not in _stop_handlers:
        _stop_handlers.append(handler)


def recheck_seconds(app: Flask | None = None) -> float:
    """Return how long a follower may wait before it looks at the stored events anyway."""
    crosses = (app or current_app).extensions["wakeups"].crosses_processes
    return SAFETY_RECHECK_SECONDS if crosses else RECHECK_SECONDS


def follow(app: Flask, run_id: str, after: int) -> Follower:
    """Return a follower of the run's events after `after` (use it as a context manager; see feeds.Follower).

    The first follower of a process starts its wake-up listener, so events from other processes reach it.
    """
    app.extensions["wakeups"].listen()
    return feeds.follower(run_id, after, recheck_seconds(app))


def notify(run_id: str, seq: int) -> None:
    """Note that the run stored events up to `seq` (elsewhere): its followers here read them once."""
    feeds.notify(run_id, seq)


def wait_for_events(run_id: str, after: int, timeout: float) -> bool:
    """Sleep until the run has news after `after`, or the timeout passes; return whether there may be news.

    The first wait of a process, or one after the wake-ups reconnected, answers True so the caller reads
    again what it may have missed. Call it with no database connection checked out.
    """
    if current_app.extensions["wakeups"].listen():
        return True
    return feeds.wait_for_news(run_id, after, timeout)


def deliver(message: str) -> None:
    """Handle a wake-up from the app's channel (see `app.runtime.wakeups` for the messages)."""
    kind, _, rest = message.partition(" ")
    if kind == "e":
        for run_id, seq in wakeups.parse_events(rest):
            feeds.notify(run_id, seq)
    elif kind == "s":
        for handler in list(_stop_handlers):
            handler(rest)
    elif kind == "*":
        feeds.look_again_everywhere()


def request_stop(app: Flask, run_id: str) -> None:
    """Commit the session (which flags the run cancel_requested) and tell every process, this one too."""
    channel = app.extensions["wakeups"]
    message = f"s {run_id}"
    channel.stage(db.session, message)
    db.session.commit()
    channel.committed(message)
    deliver(message)


class TextScreen(Protocol):
    """What screens a streamed answer (app/runtime/holdback.py `StreamScreen`)."""

    def feed(self, delta: str) -> str: ...

    def rest(self) -> str: ...


class EventWriter:
    """Stores a run's events in order (through the process's event store). Text deltas are coalesced for a
    few milliseconds.

    A delta is never held longer than that (a timer on the runtime loop stores it when the model
    pauses), unless the writer holds its text (`hold_text`: an agent with output checks, whose answer
    is stored with the end event once checked) or screens it (`screen_text`: every other agent, whose
    answer streams through the output guardrails' hold-back window, app/runtime/holdback.py).
    """

    def __init__(self, app: Flask, run_id: str, start_seq: int = 0) -> None:
        self.app = app
        self.run_id = run_id
        self.seq = start_seq
        self._text: list[str] = []
        # Held text is stored only with the end event: the answer is shown once it is checked.
        self.holding = False
        # Screened text goes out as far as the screen lets it; the rest with the end event.
        self._screen: TextScreen | None = None
        self._told_writing = False
        self._last_flush = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None
        self._wakeups: wakeups.Wakeups = app.extensions["wakeups"]
        self._staged: list[dict[str, Any]] = []

    def text(self, delta: str) -> None:
        if not delta:
            return
        if self._screen is not None and not self.holding:
            delta = self._screen.feed(delta)
            if not delta:
                return
        self._text.append(delta)
        if self.holding:
            return
        if time.monotonic() - self._last_flush >= TEXT_FLUSH_SECONDS:
            self.flush()
        elif self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(TEXT_FLUSH_SECONDS, self.flush)
            except RuntimeError:  # not on a loop: the next event or the end stores the text
                pass

    def hold_text(self) -> None:
        """Keep the text back until the end event (tool steps still go out at once)."""
        self.holding, self._screen = True, None

    def screen_text(self, screen: TextScreen) -> None:
        """Let the text out as far as `screen` allows; what it still holds goes with the end event."""
        self.holding, self._screen = False, screen

    def writing(self) -> None:
        """While the text is held, tell listeners once that the answer is being written (a WRITING event)."""
        if self.holding and not self._told_writing:
            self._told_writing = True
            self.emit(WRITING, {})

    def emit(self, type_: str, data: dict[str, Any]) -> None:
        """Store an event, after the text not yet stored, in one commit."""
        self._last_flush = time.monotonic()
        self._cancel_timer()
        rows = [self._pending_text()] if self._text and not self.holding else []
        self._store([*rows, self._row(type_, data)])

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        self._cancel_timer()
        if self._text and not self.holding:
            self._store([self._pending_text()])

    async def settled(self) -> None:
        """Store the text waiting for its flush, then wait (without blocking the loop) until every event emitted
        so far is stored: call before `stage`, whose transaction may hold the database's write turn."""
        self.flush()
        await event_store().settled(self.run_id)

    def stage(self, *events: tuple[str, dict[str, Any]]) -> None:
        """Add events, after the text not yet stored, to the caller's open transaction.

        Every event emitted before is committed first (`settled()`, or here), so the sequence numbers
        become visible in order. Call `published()` once the caller has committed.
        """
        self._cancel_timer()
        # Settled before (`settled()`); waiting here could wait for this very transaction's write turn.
        if not event_store().settle(self.run_id, timeout=0):
            log.info("run %s stores its end before some of its events", self.run_id)
        if self._screen is not None:  # the end: the answer has passed the guardrails whole
            self._text.append(self._screen.rest())
            self._screen = None
        rows = [self._pending_text()] if any(self._text) else []
        rows += [self._row(type_, data) for type_, data in events]
        db.session.execute(db.insert(RunEvent), rows)
        for message in wakeups.event_messages({self.run_id: self.seq}):
            self._wakeups.stage(db.session, message)
        self._staged = rows

    def published(self) -> None:
        """Hand the staged events to the followers and wake the other processes, after the caller committed."""
        for message in wakeups.event_messages({self.run_id: self.seq}):
            self._wakeups.committed(message)
        staged, self._staged = self._staged, []
        feeds.deliver(self.run_id, [StoredEvent(row["seq"], row["type"], row["data"]) for row in staged])

    def _pending_text(self) -> dict[str, Any]:
        delta, self._text = "".join(self._text), []
        return self._row("text", {"delta": delta})

    def discard_text(self) -> None:
        """Drop the text not yet stored, and hold whatever comes after it (a refusal, a checked answer)."""
        self._cancel_timer()
        self._text = []
        self.hold_text()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _row(self, type_: str, data: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        return {"run_id": self.run_id, "seq": self.seq, "type": type_, "data": data}

    def _store(self, rows: list[dict[str, Any]]) -> None:
        event_store().put(self.app, self.run_id, rows)  # stored, announced and handed over by its thread
