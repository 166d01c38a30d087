"""Share links: a read-only snapshot of a conversation for chosen people."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import JSON, Column, ForeignKey, String, Table
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

AUDIENCES = {
    "instance": "Any signed-in user of this Skilldesk",
    "users": "Only the people I name",
    "public": "Anyone with the link",
}

share_users = Table(
    "share_users",
    db.metadata,
    Column("share_id", ForeignKey("shares.id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
)


def new_share_token() -> str:
    """Return an unguessable link token (256 random bits)."""
    return secrets.token_urlsafe(32)


class Share(db.Model):
    __tablename__ = "shares"

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True, default=new_share_token)
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    audience: Mapped[str] = mapped_column(String(10), default="instance")
    snapshot: Mapped[list] = mapped_column(JSON, default=list)
    snapshot_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    conversation = relationship("Conversation")
    users = relationship("User", secondary=share_users)

    def live(self, now: datetime | None = None) -> bool:
        """Tell whether the link still opens: not revoked, not expired, conversation not deleted."""
        now = now or utcnow()
        return (
            self.revoked_at is None
            and (self.expires_at is None or self.expires_at > now)
            and self.conversation.deleted_at is None
        )
