"""What a case's database holds, read inside its disposable app: rows, preferences, context, transcript, audit."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart
from sqlalchemy import inspect, select

from app.extensions import db
from app.models import ApprovalRecord, Conversation, DataTable, Message, User
from app.tables import schema


def state() -> tuple[dict[str, list[dict[str, Any]]], set[str]]:
    """Every table's rows (table name → rows) and every table name, a table made outside the definitions too."""
    names = set(db.session.scalars(select(DataTable.name)))
    rows: dict[str, list[dict[str, Any]]] = {}
    for definition in db.session.scalars(select(DataTable)):
        rows[definition.name] = [dict(r) for r in db.session.execute(
            select(schema.sql_table(definition))).mappings()]
    names |= set(inspect(db.engine).get_table_names())
    return rows, names


def preferences(user_id: int) -> dict[str, Any]:
    """The user's stored preferences, as stored."""
    return dict(db.session.scalar(select(User.preferences).where(User.id == user_id)) or {})


def context_text(conversation_id: int) -> str:
    """What the assistant said in the conversation's stored model context (what the next turn sends)."""
    stored = db.session.scalar(select(Conversation.model_context).where(Conversation.id == conversation_id))
    if not stored:
        return ""
    messages = ModelMessagesTypeAdapter.validate_json(stored)
    return "\n\n".join(part.content for message in messages if isinstance(message, ModelResponse)
                       for part in message.parts if isinstance(part, TextPart))


def messages(conversation_id: int) -> list[Message]:
    """The conversation's messages, oldest first."""
    return list(db.session.scalars(select(Message).where(Message.conversation_id == conversation_id)
                                   .order_by(Message.id)))


def audit(conversation_id: int) -> list[dict[str, Any]]:
    """The approvals audit of the conversation: each call's tool, status and scope."""
    return [{"tool": record.tool_name, "status": record.status, "scope": record.scope}
            for record in db.session.scalars(select(ApprovalRecord).where(
                ApprovalRecord.conversation_id == conversation_id).order_by(ApprovalRecord.id))]


def data_changes(before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What the case changed in the tables: per table the ids of the rows added, deleted and changed."""
    changes: dict[str, Any] = {}
    for table in sorted(set(before) | set(after)):
        old = {row.get("id"): row for row in before.get(table, [])}
        new = {row.get("id"): row for row in after.get(table, [])}
        entry = {"added": sorted(set(new) - set(old)), "deleted": sorted(set(old) - set(new)),
                 "changed": sorted(key for key in set(old) & set(new) if old[key] != new[key])}
        if table not in before:
            entry["created"] = True
        if any(entry.values()):
            changes[table] = entry
    return changes
