"""Follow a run's stored events for a client of another tool: the AG-UI stream, the OpenAI-compatible stream, MCP.

One loop for every such encoder: take the run's events after a sequence number from this process's
feed (from memory; from the database on the first read, after a wake-up from another process, or when the
feed overflowed — a short session, released before any yield or wait, so a stream costs a thread, never a
pool slot), hand them to the encoder, write what it made, then wait for the next events. Between two waits
it re-checks that the client is still signed in (a revoked or expired token, an ended session, a deactivated
user end the stream; the run goes on) and that the client is still there (app/web/stream_client.py: its socket, and
`: keep-alive` every STREAM_HEARTBEAT_SECONDS while nothing else was written).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from flask import Flask

from app.accounts import sessions
from app.api.tokens import token_is_live
from app.extensions import db
from app.models import Message, Run
from app.models.chat import ACTIVE_STATUSES
from app.runtime import events as run_events
from app.web.stream_client import StreamClient

# Why a follow ended: the run's end event was written, the run was gone or over already, the client left,
# or the client is no longer signed in.
ENDED, GONE, LEFT, SIGNED_OUT = "ended", "gone", "left", "signed out"


@dataclass(frozen=True)
class Viewer:
    """What signed the stream's request in, re-checked while it is open: a token's id, or a session's token."""

    token_id: int | None = None
    session_token: str | None = None

    def still_signed_in(self) -> bool:
        if self.token_id is not None:
            return token_is_live(self.token_id)
        return self.session_token is None or sessions.is_live(self.session_token)


# encode(events stored since the last read, the end event if it is among them, the answer it names) -> text to write
# (an event has `seq`, `type` and `data`: app/runtime/feeds.py StoredEvent)
Encoder = Callable[[list[Any], Any, Message | None], list[str]]
# How often a stream looks at the sign-in and the run's status while it follows.
CHECK_SECONDS = 1.0


def follow_run(app: Flask, run_id: str, after: int, viewer: Viewer, encode: Encoder,
               client: StreamClient | None = None) -> Iterator[str]:
    """Yield what `encode` makes of the run's events after `after`, until the end; returns why it stopped.

    The events come from memory when this process stored them (app/runtime/feeds.py), else from one read of
    the database per wake-up; the sign-in and the run's status are looked at once a second at most.
    """
    checked = 0.0
    with run_events.follow(app, run_id, max(after, 0)) as follower:
        while True:
            with app.app_context():
                look = time.monotonic() - checked >= CHECK_SECONDS
                if look and not viewer.still_signed_in():
                    return SIGNED_OUT
                stored = follower.next(0)
                frames, ended = _encoded(stored, encode)
                # Past the end already (a client resuming after it), or the run went with its conversation.
                status = db.session.scalar(db.select(Run.status).where(Run.id == run_id)) \
                    if look and not stored else None
                if look:
                    checked = time.monotonic()
            yield from frames
            if ended:
                return ENDED
            if look and not stored and status not in ACTIVE_STATUSES:
                follower.look_again()  # the end event was committed with the status: read it, else stop
                with app.app_context():
                    frames, ended = _encoded(follower.next(0), encode)
                yield from frames
                return ENDED if ended else GONE
            if client is not None:
                if frames:
                    client.wrote()
                if client.gone():
                    return LEFT
                if beat := client.heartbeat():
                    yield beat
            follower.wait(CHECK_SECONDS)


def _encoded(stored: list, encode: Encoder) -> tuple[list[str], bool]:
    """Encode events (in an app context: the end's answer is read); whether the end is among them."""
    end = next((e for e in stored if e.type == run_events.END), None)
    message = db.session.get(Message, (end.data or {}).get("message_id") or 0) if end is not None else None
    return encode(stored, end, message), end is not None
