"""What compaction summarized away ("Keep a record"): for admins' diagnostics only."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import UTCDateTime, utcnow


class CompactionRecord(db.Model):
    __tablename__ = "compaction_records"

    id: Mapped[int] = mapped_column(primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    trigger: Mapped[str] = mapped_column(String(20))  # threshold | command | run
    tokens_before: Mapped[int] = mapped_column(default=0)
    tokens_after: Mapped[int] = mapped_column(default=0)
    cleared_count: Mapped[int] = mapped_column(default=0)
    summary: Mapped[str | None] = mapped_column(Text)
    # The model messages the summary replaced (ModelMessagesTypeAdapter JSON).
    removed: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
