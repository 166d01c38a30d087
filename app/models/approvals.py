"""Deferred tool calls that wait for a person, and the audit trail of tool approvals.

A `PendingCall` is conversation content (the tool's arguments, a plan, a question): it goes when the
conversation is purged. An `ApprovalRecord` is an audit entry: who asked for which tool call, who
decided, when and how. It outlives the conversation and the accounts it names (ON DELETE SET NULL),
and keeps the names as they were, because an audit trail that forgets who acted is no audit trail.
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

# What a pending call waits for: consent to run a tool, a verdict on a plan, an answer to a question,
# or a result from outside the agent (a skill that defers without a card of its own).
CALL_KINDS = ("approval", "plan", "question", "external")
# pending: waits; answered: a person decided (or a typed message moved on); expired: no decision came in
# time, and the timeout's choice answered it.
CALL_STATUSES = ("pending", "answered", "expired")
APPROVAL_STATUSES = ("pending", "allowed", "denied", "expired")
# once: this call only; run: this call and later calls of the tool in the same run and its resumptions;
# always: this call and later calls of the tool in the same chat;
# standing: allowed without a card because of an earlier "run" or "always".
APPROVAL_SCOPES = ("once", "run", "always", "standing")
# What applies when no decision came in time: deny the call, fail the run, or go on without the tool.
TIMEOUT_CHOICES = ("deny", "fail", "continue")
NOTIFICATION_CHANNELS = ("email", "webhook")
NOTIFICATION_STATUSES = ("pending", "sent", "failed", "skipped")  # skipped: decided before it went out


class PendingCall(db.Model):
    """A tool call a run deferred: it shows as a card until someone answers it, then a new run resumes."""

    __tablename__ = "pending_calls"
    __table_args__ = (Index("ix_pending_calls_conversation_status", "conversation_id", "status"),
                      Index("ix_pending_calls_status_expires_at", "status", "expires_at"))

    id: Mapped[int] = mapped_column(primary_key=True)
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    # The assistant message that shows the card.
    message_id: Mapped[int | None] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), index=True)
    # The run that deferred the call; every call it deferred is answered before one run resumes them all.
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"), index=True)
    tool_call_id: Mapped[str] = mapped_column(String(200))
    tool_name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(12))
    # The call's arguments as the model sent them, and what its tool attached for the card.
    args: Mapped[dict] = mapped_column(JSON, default=dict)
    details: Mapped[dict] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(12), default="pending")  # pending | answered | expired
    # What goes back to the model: {"approved": bool, "message": str} or {"result": str, "instructions": str}.
    answer: Mapped[dict | None] = mapped_column(JSON)
    resume_run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    answered_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    approval_id: Mapped[int | None] = mapped_column(ForeignKey("approval_records.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When the timeout's choice applies if nobody decided (None: never, for calls stored before timeouts).
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the people who may decide were told (or found to have nobody to tell): the notifications' outbox.
    notified_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    conversation = relationship("Conversation")
    approval = relationship("ApprovalRecord")
    answered_by = relationship("User", foreign_keys=[answered_by_id])

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    @property
    def expired(self) -> bool:
        return self.status == "expired"

    def overdue(self, now: datetime) -> bool:
        """Tell whether the call still waits past its deadline (the scheduler applies the choice shortly)."""
        return self.pending and self.expires_at is not None and now >= self.expires_at

    def state(self, now: datetime) -> str:
        """Return pending, answered or expired, counting a call past its deadline as expired."""
        return "expired" if self.overdue(now) else self.status

    @property
    def arguments_json(self) -> str:
        """Return the arguments as indented JSON, for the card."""
        return json.dumps(self.args or {}, indent=2, ensure_ascii=False)

    def __repr__(self) -> str:
        return f"<PendingCall {self.id} {self.kind} {self.status}>"


class ApprovalRecord(db.Model):
    """One request to run a tool that needed approval, and its decision: an audit entry kept for good."""

    __tablename__ = "approval_records"
    __table_args__ = (Index("ix_approval_records_conversation_tool", "conversation_id", "tool_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id", ondelete="SET NULL"))
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    # On whose behalf the agent asked, and which agent; the labels keep the names as they were.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    requested_by: Mapped[str] = mapped_column(String(254), default="")
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    agent_name: Mapped[str] = mapped_column(String(80), default="")
    tool_name: Mapped[str] = mapped_column(String(200))
    tool_call_id: Mapped[str] = mapped_column(String(200))
    # A clipped summary of the arguments: what was asked for, no more of the conversation than that.
    arguments: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(12), default="pending")
    scope: Mapped[str | None] = mapped_column(String(12))
    reason: Mapped[str | None] = mapped_column(Text)
    decided_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    decided_by: Mapped[str | None] = mapped_column(String(254))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<ApprovalRecord {self.id} {self.tool_name} {self.status}>"


class Notification(db.Model):
    """One message telling someone that a run waits for them: an e-mail or a trigger's webhook (an outbox row).

    Written before it is sent, so a failure or a restart loses nothing: the scheduler sends what is still
    pending and retries what failed, while the calls wait. Admins see failures on the run.
    """

    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    # The assistant message whose waiting calls this is about (the batch).
    message_id: Mapped[int | None] = mapped_column(ForeignKey("messages.id", ondelete="SET NULL"))
    channel: Mapped[str] = mapped_column(String(10))  # email | webhook
    # An e-mail address, or the trigger whose webhook is called (its URL stays on the trigger).
    recipient: Mapped[str] = mapped_column(String(254))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    trigger_id: Mapped[int | None] = mapped_column(ForeignKey("triggers.id", ondelete="SET NULL"))
    status: Mapped[str] = mapped_column(String(10), default="pending", index=True)
    attempts: Mapped[int] = mapped_column(default=0)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    attempted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<Notification {self.id} {self.channel} {self.status}>"
