"""Accounts: people who sign in, with a role and their own preferences."""

from __future__ import annotations

from datetime import datetime

from flask_login import UserMixin
from sqlalchemy import JSON, ForeignKey, String, event
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.orm.base import NEVER_SET, NO_VALUE
from werkzeug.security import check_password_hash, generate_password_hash

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

ROLES = ("admin", "user", "guest")


class User(UserMixin, db.Model):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    name: Mapped[str] = mapped_column(String(100))
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(10), default="user")
    active: Mapped[bool] = mapped_column(default=True)
    preferences: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Sessions signed in at another generation no longer count: a new password, a new role or a
    # deactivation moves it on (see _end_sessions below), and so does "Sign out everywhere".
    session_generation: Mapped[int] = mapped_column(default=0, server_default="0")

    # The token of the session this object was loaded for (never stored): what Flask-Login keeps in
    # the session cookie and the remember-me cookie instead of the user's id, so both can be revoked.
    session_token = None

    def get_id(self) -> str | None:
        """Return the session's token: the cookies carry it, never the bare user id."""
        return self.session_token

    @property
    def is_active(self) -> bool:
        return self.active

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def set_password(self, password: str) -> None:
        """Store a salted hash of the password, never the password."""
        self.password_hash = generate_password_hash(password)

    def check_password(self, password: str) -> bool:
        """Tell whether the password matches the stored hash."""
        return check_password_hash(self.password_hash, password)

    def __repr__(self) -> str:
        return f"<User {self.id} {self.role}>"


class UserSession(db.Model):
    """One signed-in browser: a random token (stored hashed), revoked by deleting the row."""

    __tablename__ = "user_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    generation: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


def _end_sessions(target: User, value, oldvalue, _initiator) -> None:
    # Fires on assignment only (not when rows load); a new object's first values end nothing.
    if oldvalue is not NO_VALUE and oldvalue is not NEVER_SET and oldvalue != value:
        target.session_generation = (target.session_generation or 0) + 1


for _attribute in (User.password_hash, User.role, User.active):
    event.listen(_attribute, "set", _end_sessions, active_history=True)  # old value loaded if expired
