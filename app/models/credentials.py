"""A person's own saved credentials (API tokens), encrypted at rest, used by tools acting for them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import UTCDateTime, utcnow


class Credential(db.Model):
    """A named secret of one user; only its last characters are ever shown back."""

    __tablename__ = "credentials"
    __table_args__ = (UniqueConstraint("user_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    # A Fernet token; the key is derived from SECRET_KEY, so the database alone does not reveal the value.
    secret: Mapped[str] = mapped_column(Text)
    hint: Mapped[str] = mapped_column(String(8), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    def __repr__(self) -> str:
        return f"<Credential {self.id} user={self.user_id} {self.name!r}>"
