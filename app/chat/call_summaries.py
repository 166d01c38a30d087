"""What a waiting call asks and how it was answered, as plain data: for the exports, the API and the inbox.

The decision says who made it and when: the person's e-mail as the audit kept it (so it stays after the
account goes), or that no decision came in time and which choice applied.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from app.extensions import db
from app.models import ApprovalRecord, PendingCall, User
from app.models.base import utcnow

FOLD_CHARS = 160  # an argument longer than this is shown folded: its start, and the whole on request


def folded_arguments(args: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Return each argument as {name, short, full}: `full` is set only when the value is long (to fold)."""
    items = []
    for name, value in (args or {}).items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
        long = len(text) > FOLD_CHARS or "\n" in text.strip()
        short = " ".join(text.split())
        items.append({"name": str(name), "short": short[:FOLD_CHARS] + ("…" if len(short) > FOLD_CHARS else ""),
                      "full": text if long else None})
    return items


def decision_of(call: PendingCall) -> dict[str, Any] | None:
    """Return how the call was answered: outcome, scope, comment, by whom and when (None while it waits)."""
    if call.pending:
        return None
    answer = call.answer or {}
    record: ApprovalRecord | None = call.approval
    by = record.decided_by if record is not None and record.decided_by else None
    if by is None and call.answered_by_id is not None:
        by = db.session.scalar(db.select(User.email).where(User.id == call.answered_by_id))
    if call.expired:
        outcome = "expired"
    elif call.kind == "approval":
        outcome = "allowed" if answer.get("approved") else "denied"
    elif call.kind == "plan":
        outcome = "approved" if answer.get("result") == "approved" else "changes requested"
    else:
        outcome = "discussed" if answer.get("discuss") else "answered"
    decision: dict[str, Any] = {"outcome": outcome, "by": None if call.expired else by,
                                "at": call.answered_at.isoformat() if call.answered_at else None}
    if call.expired:
        decision["choice"] = answer.get("choice")
    if call.kind == "approval" and answer.get("approved"):
        decision["scope"] = answer.get("scope") or (record.scope if record else "once")
    if record is not None and record.reason and not call.expired:
        decision["comment"] = record.reason
    if call.kind == "question" and not call.expired and not answer.get("discuss"):
        decision["answer"] = answer.get("result")
    if call.kind == "plan" and answer.get("changes"):
        decision["changes"] = answer.get("changes")
    return decision


def call_summary(call: PendingCall, now: datetime | None = None, arguments: bool = True) -> dict[str, Any]:
    """Return the call as data: what it asks (the arguments only when `arguments`), its state and decision."""
    args = call.args or {}
    summary: dict[str, Any] = {
        "id": call.id, "kind": call.kind, "tool": call.tool_name, "status": call.state(now or utcnow()),
        "created_at": call.created_at.isoformat(),
        "expires_at": call.expires_at.isoformat() if call.expires_at else None,
    }
    if arguments:
        if call.kind == "question":
            summary.update(question=args.get("question", ""), options=list(args.get("options") or []))
        elif call.kind == "plan":
            summary["plan"] = args.get("plan", "")
        else:
            summary["arguments"] = args
    summary["decision"] = decision_of(call)
    return summary


def calls_by_message(conversation_id: int) -> dict[int, list[PendingCall]]:
    """Return the conversation's waiting calls (past and present) by the message that shows them."""
    found: dict[int, list[PendingCall]] = {}
    for call in db.session.scalars(db.select(PendingCall).where(PendingCall.conversation_id == conversation_id)
                                   .order_by(PendingCall.id)):
        found.setdefault(call.message_id or 0, []).append(call)
    return found
