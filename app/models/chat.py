"""Conversations: the transcript people see, the model context the model is given, and runs."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, Text, UniqueConstraint, false, text
from sqlalchemy.orm import Mapped, deferred, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

RUN_STATUSES = ("queued", "running", "waiting", "succeeded", "failed", "denied", "expired", "cancelled", "unfinished",
                "interrupted", "refused")
ACTIVE_STATUSES = ("queued", "running")
# A waiting run is neither active (no process runs it: a restart leaves it waiting) nor ended: it ends when
# the person decides (succeeded, failed, denied…) or when no decision came in time (expired).
WAITING = "waiting"
# What a waiting run waits for: consent to run a tool, a verdict on a plan, an answer, a result from outside.
WAITING_FOR = ("approval", "plan", "question", "external")
ACTIVE_CONDITION = "status IN ('queued', 'running')"
ONE_ACTIVE_RUN = "uq_runs_one_active_per_conversation"


def new_run_id() -> str:
    """Return an unguessable run id (128 random bits)."""
    return secrets.token_hex(16)


class Conversation(db.Model):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_user_updated", "user_id", "updated_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    title: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(20), default="chat")
    # A conversation that holds one stateless exchange of another tool (the OpenAI-compatible API, MCP):
    # listed nowhere, and purged when its request ends (app/api/exchanges.py).
    ephemeral: Mapped[bool] = mapped_column(default=False, server_default=false())
    # The model picker's choice for this conversation, if any.
    model_config_id: Mapped[int | None] = mapped_column(ForeignKey("model_configs.id", ondelete="SET NULL"))
    # pydantic-ai messages as JSON (ModelMessagesTypeAdapter); never loaded by list queries.
    model_context: Mapped[str | None] = deferred(mapped_column(Text))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    agent = relationship("Agent")
    user = relationship("User")

    @property
    def display_title(self) -> str:
        return self.title or "New chat"

    def __repr__(self) -> str:
        return f"<Conversation {self.id}>"


class Message(db.Model):
    """One bubble of the transcript. Assistant messages keep their tool steps for display."""

    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_conversation_id_id", "conversation_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(12))  # user | assistant | notice
    content: Mapped[str] = mapped_column(Text, default="")
    steps: Mapped[list] = mapped_column(JSON, default=list)
    meta: Mapped[dict] = mapped_column(JSON, default=dict)
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    input_tokens: Mapped[int] = mapped_column(default=0)
    output_tokens: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    run = relationship("Run", foreign_keys=[run_id])

    def __repr__(self) -> str:
        return f"<Message {self.id} {self.role}>"


class Run(db.Model):
    """One turn of an agent: queued, running, then succeeded, failed, cancelled, unfinished, interrupted or refused.

    A run that ends on calls waiting for a person is `waiting` (`waiting_for` says for what) until they are
    decided: then it takes the end of the run that carried the decisions, or `denied` / `expired`.
    """

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_status", "status"),
        # At most one queued or running run per conversation: two sends at once cannot both start one.
        Index(ONE_ACTIVE_RUN, "conversation_id", unique=True, sqlite_where=text(ACTIVE_CONDITION),
              postgresql_where=text(ACTIVE_CONDITION)),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_run_id)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    status: Mapped[str] = mapped_column(String(12), default="queued")
    error: Mapped[str | None] = mapped_column(Text)
    # What went wrong in the libraries' own words (an exception, a provider's body): shown to admins only;
    # `error` says it in Skilldesk's words.
    error_detail: Mapped[str | None] = mapped_column(Text)
    prompt: Mapped[str | None] = mapped_column(Text)
    trigger: Mapped[str] = mapped_column(String(20), default="chat")
    input_tokens: Mapped[int] = mapped_column(default=0)
    output_tokens: Mapped[int] = mapped_column(default=0)
    requests: Mapped[int] = mapped_column(default=0)
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    waiting_for: Mapped[str | None] = mapped_column(String(12))
    # The first run of a chain of resumptions (a run that carries decisions continues its origin's work):
    # what "Always in this run" spans. None for a run that is its own origin.
    origin_run_id: Mapped[str | None] = mapped_column(String(32), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    conversation = relationship("Conversation")

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def waiting(self) -> bool:
        return self.status == WAITING

    @property
    def origin(self) -> str:
        """Return the id of the first run of this run's chain of resumptions."""
        return self.origin_run_id or self.id

    def __repr__(self) -> str:
        return f"<Run {self.id} {self.status}>"


class RunEvent(db.Model):
    """A stored step of a run, numbered so a stream can resume after Last-Event-ID."""

    __tablename__ = "run_events"
    __table_args__ = (UniqueConstraint("run_id", "seq"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int]
    type: Mapped[str] = mapped_column(String(30))
    data: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
