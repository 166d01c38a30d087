"""Compaction in the chat: the `/compact` command, and the admins' records purged with a conversation.

The compaction itself (inline, after a reply, on the command) is the compaction skill's
(`app/skills/compaction.py`).
"""

from __future__ import annotations

import logging

from app.extensions import db
from app.models import CompactionRecord, Conversation

log = logging.getLogger(__name__)

COMMAND = "/compact"


def parse_command(text: str) -> str | None:
    """Return the instructions of a `/compact [instructions]` message, or None for other messages."""
    stripped = text.strip()
    if stripped == COMMAND or stripped.startswith(COMMAND + " ") or stripped.startswith(COMMAND + "\n"):
        return stripped[len(COMMAND):].strip()
    return None


def purge_records(conversation: Conversation) -> None:
    """Delete the admins' compaction records of a purged conversation (their summaries are its content)."""
    db.session.execute(db.delete(CompactionRecord).where(CompactionRecord.conversation_id == conversation.id))
