"""Run events: stored with sequence numbers, then announced to every listener of the run.

Any worker can serve any stream because events are stored. Listeners in the writer's process are
woken at once; listeners in other processes through the app's wake-ups (`app/runtime/wakeups.py`:
PostgreSQL LISTEN/NOTIFY or Redis pub/sub), with a slow safety re-check in case one is lost.
Stop travels the same way, so it reaches a run in any process.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from flask import Flask, current_app

from app.extensions import db
from app.models import RunEvent
from app.runtime import wakeups

TEXT_FLUSH_SECONDS = 0.05
LATEST_KEPT = 10_000
END = "end"
# What a run changes on the chat page beside its answer: a notice it stored (data: message_id), and the
# chat's header (the agent after a hand-over). app/chat/stream.py renders them as out-of-band fragments.
NOTICE = "notice"
HEADER = "header"
# The model is writing the answer, whose text is held until it is checked (no data, once per run).
WRITING = "writing"
# How long a listener sleeps before it looks at the database anyway: every second when only this
# process can wake it, rarely when wake-ups cross processes (a lost message then costs this long).
RECHECK_SECONDS = 1.0
SAFETY_RECHECK_SECONDS = 5.0

_lock = threading.Lock()
_waiting: dict[str, threading.Condition] = {}  # runs someone in this process waits for
_waiters: dict[str, int] = {}
_latest: OrderedDict[str, int] = OrderedDict()  # the newest sequence number announced per run
_stop_handlers: list[Callable[[str], None]] = []


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
    """Return how long a listener may wait before it looks at the stored events anyway."""
    crosses = (app or current_app).extensions["wakeups"].crosses_processes
    return SAFETY_RECHECK_SECONDS if crosses else RECHECK_SECONDS


def notify(run_id: str, seq: int) -> None:
    """Record the run's newest stored event and wake every listener of the run in this process."""
    with _lock:
        if _latest.get(run_id, 0) >= seq:
            return  # nothing new (our own announcement coming back from another process's channel)
        _latest[run_id] = seq
        _latest.move_to_end(run_id)
        while len(_latest) > LATEST_KEPT:
            _latest.popitem(last=False)
        condition = _waiting.get(run_id)
        if condition is not None:
            condition.notify_all()


def wait_for_events(run_id: str, after: int, timeout: float) -> bool:
    """Sleep until the run has announced an event after `after`, or the timeout passes.

    Returns whether there may be news (False after a quiet timeout). Checking the newest sequence
    number under the lock closes the gap between a listener's query and its wait, so no
    announcement is lost; the first wait of a process, or one after the wake-ups reconnected,
    answers True so the caller reads again what it may have missed. Call it with no database
    connection checked out: it can sleep for the whole timeout.
    """
    if current_app.extensions["wakeups"].listen():
        return True
    with _lock:
        if _latest.get(run_id, 0) > after:
            return True
        condition = _waiting.get(run_id)
        if condition is None:
            condition = _waiting[run_id] = threading.Condition(_lock)
        _waiters[run_id] = _waiters.get(run_id, 0) + 1
        try:
            woken = condition.wait(timeout)
        finally:
            _waiters[run_id] -= 1
            if not _waiters[run_id]:
                del _waiters[run_id], _waiting[run_id]
        return woken or _latest.get(run_id, 0) > after


def waiting(run_id: str) -> int:
    """Return how many listeners in this process are waiting for the run's next event right now."""
    with _lock:
        return _waiters.get(run_id, 0)


def deliver(message: str) -> None:
    """Handle a wake-up from the app's channel (see `app.runtime.wakeups` for the messages)."""
    kind, _, rest = message.partition(" ")
    if kind == "e":
        run_id, _, seq = rest.partition(" ")
        if seq.isdigit():
            notify(run_id, int(seq))
    elif kind == "s":
        for handler in list(_stop_handlers):
            handler(rest)
    elif kind == "*":
        with _lock:
            for condition in _waiting.values():
                condition.notify_all()


def request_stop(app: Flask, run_id: str) -> None:
    """Commit the session (which flags the run cancel_requested) and tell every process, this one too."""
    channel = app.extensions["wakeups"]
    message = f"s {run_id}"
    channel.stage(db.session, message)
    db.session.commit()
    channel.committed(message)
    deliver(message)


def events_after(run_id: str, seq: int) -> list[RunEvent]:
    """Return the run's stored events after a sequence number, in order."""
    return list(db.session.scalars(
        db.select(RunEvent).where(RunEvent.run_id == run_id, RunEvent.seq > seq).order_by(RunEvent.seq)
    ))


class TextScreen(Protocol):
    """What screens a streamed answer (app/runtime/holdback.py `StreamScreen`)."""

    def feed(self, delta: str) -> str: ...

    def rest(self) -> str: ...


class EventWriter:
    """Stores a run's events in order. Text deltas are coalesced for a few milliseconds.

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

    def stage(self, *events: tuple[str, dict[str, Any]]) -> None:
        """Add events, after the text not yet stored, to the caller's open transaction.

        Call `published()` once the caller has committed.
        """
        self._cancel_timer()
        if self._screen is not None:  # the end: the answer has passed the guardrails whole
            self._text.append(self._screen.rest())
            self._screen = None
        rows = [self._pending_text()] if any(self._text) else []
        rows += [self._row(type_, data) for type_, data in events]
        db.session.execute(db.insert(RunEvent), rows)
        self._wakeups.stage(db.session, self._message())

    def published(self) -> None:
        """Wake listeners after the caller committed staged events."""
        self._wakeups.committed(self._message())
        notify(self.run_id, self.seq)

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

    def _message(self) -> str:
        return f"e {self.run_id} {self.seq}"

    def _store(self, rows: list[dict[str, Any]]) -> None:
        with self.app.app_context():
            db.session.execute(db.insert(RunEvent), rows)
            self._wakeups.stage(db.session, self._message())
            db.session.commit()
        self.published()
