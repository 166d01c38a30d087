"""Queries on conversations: the owner's getter, the sidebar page, search, the transcript (exports: exports.py)."""

from __future__ import annotations

from dataclasses import dataclass

from flask import abort
from flask_login import current_user
from sqlalchemy import or_
from sqlalchemy.sql.base import ExecutableOption

from app.extensions import db
from app.models import Conversation, Message


def get_own_conversation(conversation_id: int, *options: ExecutableOption) -> Conversation:
    """Return the signed-in user's conversation, or 404 (the same answer for someone else's).

    `options` are loader options, such as `turns.FOR_TURN` for a view that starts a run.
    """
    conversation = db.session.get(Conversation, conversation_id, options=options)
    if conversation is None or conversation.user_id != current_user.id or conversation.deleted_at is not None \
            or conversation.ephemeral:  # another tool's stateless exchange, purged when its request ends
        abort(404)
    return conversation


def sidebar_query(user_id: int, search: str = ""):
    """Select a user's conversations, newest first; never touches message bodies unless searching."""
    query = (db.select(Conversation)
             .where(Conversation.user_id == user_id, Conversation.deleted_at.is_(None),
                    Conversation.ephemeral.is_(False))
             .order_by(Conversation.updated_at.desc(), Conversation.id.desc()))
    search = search.strip()
    if search:
        pattern = f"%{_escape_like(search)}%"
        in_messages = db.select(Message.id).where(
            Message.conversation_id == Conversation.id, Message.content.ilike(pattern, escape="\\"))
        query = query.where(or_(Conversation.title.ilike(pattern, escape="\\"), in_messages.exists()))
    return query


@dataclass
class SidebarPage:
    """One page of the sidebar; `has_next` comes from fetching one row more, never from a count."""

    items: list[Conversation]
    page: int
    has_next: bool

    @property
    def next_num(self) -> int:
        return self.page + 1


def sidebar_page(user_id: int, search: str = "", page: int = 1, per_page: int = 30) -> SidebarPage:
    """Return a page of the user's conversations, newest first."""
    page = max(page, 1)
    rows = list(db.session.scalars(sidebar_query(user_id, search).limit(per_page + 1)
                                   .offset((page - 1) * per_page)))
    return SidebarPage(rows[:per_page], page, len(rows) > per_page)


@dataclass
class TranscriptPage:
    """The latest messages of a conversation (before a given one), oldest first.

    `earlier` is the id of the first message shown when older ones exist: the next page is read before it.
    """

    messages: list[Message]
    earlier: int | None


def transcript_page(conversation: Conversation, before: int | None = None, size: int = 100,
                    streaming_run: str | None = None) -> TranscriptPage:
    """Return the latest `size` messages before the message `before` (or the very latest ones).

    The notices of `streaming_run`, a run still under way, are left out: its stream replays them with
    the rest of what the run did so far, so a page loaded during the run shows each once.
    """
    query = db.select(Message).where(Message.conversation_id == conversation.id)
    if streaming_run is not None:
        query = query.where(or_(Message.run_id.is_(None), Message.run_id != streaming_run,
                                Message.role != "notice"))
    if before is not None:
        query = query.where(Message.id < before)
    rows = list(db.session.scalars(query.order_by(Message.id.desc()).limit(size + 1)))
    shown = rows[:size][::-1]
    return TranscriptPage(shown, shown[0].id if len(rows) > size else None)


def transcript(conversation: Conversation) -> list[Message]:
    """Return the conversation's messages in order."""
    return list(db.session.scalars(
        db.select(Message).where(Message.conversation_id == conversation.id).order_by(Message.id)))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
