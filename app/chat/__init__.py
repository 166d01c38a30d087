"""Chat: conversations and their transcript, sending a turn, the SSE stream, sharing, approvals, compaction
around a reply, and purging a conversation or a user's data.
"""

from __future__ import annotations

from flask import Flask

from app.chat import compaction
from app.database import purge_steps
from app.runtime import deferred


def init_app(app: Flask) -> None:
    """Register what a conversation's purge deletes beside its messages, runs, events and shares."""
    steps = purge_steps(app)
    steps.conversation += [deferred.purge_pending, compaction.purge_records]
