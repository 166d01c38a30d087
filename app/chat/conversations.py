"""Queries on conversations: the owner's getter, the sidebar page, search, export."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from flask import abort
from flask_login import current_user
from sqlalchemy import or_
from sqlalchemy.sql.base import ExecutableOption

from app.chat.call_summaries import call_summary, calls_by_message, markdown_lines
from app.extensions import db
from app.models import Conversation, Message
from app.runtime import receipt


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


def export_markdown(conversation: Conversation, messages: list[Message]) -> str:
    """Render the transcript as a Markdown document.

    Each part of a message (heading, tool steps, status, text) is a block of its own, separated by a
    blank line, so no part runs into the one before it (an answer is never a continuation of the last
    step's bullet); a step stays on one line whatever its result holds.
    """
    blocks = [f"# {conversation.display_title}"]
    names = {"user": "You", "assistant": conversation.agent.name if conversation.agent else "Assistant",
             "notice": "Note"}
    calls = calls_by_message(conversation.id)
    for message in messages:
        blocks.append(f"## {names.get(message.role, message.role)} — {message.created_at:%Y-%m-%d %H:%M} UTC")
        if message.steps:
            blocks.append("\n".join(
                f"- tool `{step.get('name')}` {_one_line(step.get('args'))} → "
                f"{_one_line((step.get('result') or '')[:500])}{' (failed)' if step.get('failed') else ''}"
                for step in message.steps))
        status = (message.meta or {}).get("status")
        if status and status != "succeeded":
            error = (message.meta or {}).get("error")
            waits_for = (message.meta or {}).get("waiting_for")
            status = f"{status} for {waits_for}" if status == "waiting" and waits_for else status
            blocks.append(f"_({status}: {error})_" if error else f"_({status})_")
        if message.content.strip():
            blocks.append(message.content.strip("\n"))
        # A turn that waited for a person: what it asked, and who decided what and when.
        blocks += [markdown_lines(call) for call in calls.get(message.id, [])]
        found = receipt.read(message.meta)
        if found is not None:
            blocks.append(_receipt_block(found))
    return "\n\n".join(blocks) + "\n"


def _receipt_block(found: dict[str, Any]) -> str:
    """A turn's receipt as a quoted block: what it changed, and what it tried without changing anything."""
    lines = [f"> **Receipt.** {receipt.headline(found)}"]
    lines += [f"> - not changed: {entry.get('summary')}" for entry in found.get("unchanged") or []]
    return "\n".join(lines)


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def export_json(conversation: Conversation, messages: list[Message]) -> str:
    """Render the transcript as JSON."""
    calls = calls_by_message(conversation.id)
    data: dict[str, Any] = {
        "id": conversation.id,
        "title": conversation.title,
        "agent": conversation.agent.name if conversation.agent else None,
        "created_at": conversation.created_at.isoformat(),
        "messages": [
            {"id": m.id, "role": m.role, "content": m.content, "steps": m.steps or [], "meta": m.meta or {},
             "input_tokens": m.input_tokens, "output_tokens": m.output_tokens,
             "created_at": m.created_at.isoformat(),
             **({"calls": [call_summary(call) for call in calls[m.id]]} if m.id in calls else {})}
            for m in messages
        ],
    }
    return json.dumps(data, ensure_ascii=False, indent=2)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
