"""Long-term memories: what agents remember, one row per memory beside its vector in Chroma."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

SCOPES = ("personal", "shared")


class Memory(db.Model):
    """A remembered fact; the row is the source of truth, the vector (same id) finds it by meaning."""

    __tablename__ = "memories"
    __table_args__ = (Index("ix_memories_user_created", "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    # The person the memory came from: its owner for a personal memory, its author for a shared one.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    scope: Mapped[str] = mapped_column(String(10), default="personal")  # personal | shared
    # Where the vector lives, kept so it can be removed even after the agent is gone.
    collection: Mapped[str] = mapped_column(String(80))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    agent = relationship("Agent")

    @property
    def vector_id(self) -> str:
        return f"memory-{self.id}"

    def __repr__(self) -> str:
        return f"<Memory {self.id} {self.scope}>"
