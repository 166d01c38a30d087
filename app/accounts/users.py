"""Account operations shared by the web pages and the CLI."""

from __future__ import annotations

import logging

from app.chat.purge import purge_user_data
from app.extensions import db
from app.models import ROLES, User

log = logging.getLogger(__name__)


def create_user(email: str, name: str, password: str, role: str = "user") -> User:
    """Create an account with a hashed password; the caller commits."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    user = User(email=email.strip().lower(), name=name.strip(), role=role, active=True, preferences={})
    user.set_password(password)
    db.session.add(user)
    return user


def delete_user(user: User) -> None:
    """Delete an account and purge everything derived from it (conversations, runs, shares)."""
    purge_user_data(user)
    db.session.delete(user)
    log.info("deleted user %s", user.id)


def admin_count() -> int:
    """Count active admins (the last one may not be demoted, deactivated or deleted)."""
    return db.session.scalar(
        db.select(db.func.count(User.id)).where(User.role == "admin", User.active.is_(True))
    )
