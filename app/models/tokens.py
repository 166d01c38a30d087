"""Personal API tokens: a user's own keys to the JSON API, stored as hashes only."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

TOKEN_SCOPES = ("read", "chat")
# A token is this prefix and 43 URL-safe characters (256 random bits); the output guardrails know the form.
TOKEN_PREFIX = "sdk_"
TOKEN_FORM = re.compile(r"(?<![A-Za-z0-9_-])sdk_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")


class ApiToken(db.Model):
    """A token of one user; the secret is shown once, at creation, and only its SHA-256 is kept."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The first characters of the token, so that its owner can tell tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    scope: Mapped[str] = mapped_column(String(10), default="read")
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self) -> str:
        return f"<ApiToken {self.id} user={self.user_id} {self.scope}>"
