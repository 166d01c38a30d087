"""Follow a run's stored events for a client of another tool: the AG-UI stream, the OpenAI-compatible stream, MCP.

One loop for every such encoder: read the events stored after a sequence number (a short session,
released before any yield or wait, so a stream costs a thread, never a pool slot), hand them to the
encoder, write what it made, then wait for the next announcement. Between two waits it re-checks that
the client is still signed in (a revoked or expired token, an ended session, a deactivated user end the
stream; the run goes on) and that the client is still there (app/web/stream_client.py: its socket, and
`: keep-alive` every STREAM_HEARTBEAT_SECONDS while nothing else was written).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from flask import Flask

from app.accounts import sessions
from app.api.tokens import token_is_live
from app.extensions import db
from app.models import Message, Run, RunEvent
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


# encode(events stored in this read, the end event if it is among them, the answer it names) -> text to write
Encoder = Callable[[list[RunEvent], RunEvent | None, Message | None], list[str]]


def follow_run(app: Flask, run_id: str, after: int, viewer: Viewer, encode: Encoder,
               client: StreamClient | None = None) -> Iterator[str]:
    """Yield what `encode` makes of the run's events after `after`, until the end; returns why it stopped."""
    seq = max(after, 0)
    while True:
        with app.app_context():
            if not viewer.still_signed_in():
                return SIGNED_OUT
            stored = run_events.events_after(run_id, seq)
            end = next((e for e in stored if e.type == run_events.END), None)
            message = db.session.get(Message, (end.data or {}).get("message_id") or 0) if end is not None else None
            frames = encode(stored, end, message)
            seq = stored[-1].seq if stored else seq
            # Past the end already (a client resuming after it), or the run went with its conversation.
            status = db.session.scalar(db.select(Run.status).where(Run.id == run_id)) if not stored else None
        yield from frames
        if end is not None:
            return ENDED
        if not stored and status not in ACTIVE_STATUSES:
            return GONE
        if client is not None:
            if frames:
                client.wrote()
            if client.gone():
                return LEFT
            if beat := client.heartbeat():
                yield beat
        with app.app_context():  # an app context, not a connection: nothing is read while it waits
            run_events.wait_for_events(run_id, seq, run_events.recheck_seconds(app))
