"""Revocable sign-in sessions: each sign-in is a row with a random token, and the cookies carry the token.

Flask-Login keeps `User.get_id()` in the session cookie and the remember-me cookie; ours is a new
random token per sign-in (stored as a SHA-256 hash), never the user's id. So:
- every sign-in gets its own token (the remember-me cookie differs across sign-ins);
- signing out deletes that row: a copy of either cookie taken before no longer signs anyone in;
- a new password, a new role, a deactivation and "Sign out everywhere" move the user's
  `session_generation` on (`app/models/users.py`), which ends every session of that user at once.
"""

from __future__ import annotations

import hashlib
import secrets
from hashlib import sha512

from flask import request
from flask_login import current_user, login_user, logout_user

from app.extensions import db
from app.models import User, UserSession


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def sign_in(user: User, remember: bool = False) -> None:
    """Start a new session for this browser (a fresh token) and sign the user in; the caller commits."""
    db.session.execute(db.delete(UserSession).where(  # sessions of earlier generations can never count again
        UserSession.user_id == user.id, UserSession.generation != user.session_generation))
    token = secrets.token_urlsafe(32)
    db.session.add(UserSession(user_id=user.id, token_hash=_hash(token), generation=user.session_generation))
    user.session_token = token
    login_user(user, remember=remember)


def sign_out() -> None:
    """End this browser's session: its row goes, so copies of its cookies stop working; the caller commits."""
    token = getattr(current_user, "session_token", None)
    if token:
        db.session.execute(db.delete(UserSession).where(UserSession.token_hash == _hash(token)))
    logout_user()


def sign_out_everywhere(user: User) -> None:
    """End every session of the user, this one included; the caller commits."""
    user.session_generation = (user.session_generation or 0) + 1
    db.session.execute(db.delete(UserSession).where(UserSession.user_id == user.id))
    if current_user.is_authenticated and current_user.id == user.id:
        logout_user()


def load_user(token: str) -> User | None:
    """The active user whose current-generation session has this token, or None."""
    user = db.session.scalar(
        db.select(User).join(UserSession, UserSession.user_id == User.id).where(
            UserSession.token_hash == _hash(token), UserSession.generation == User.session_generation,
            User.active.is_(True)))
    if user is not None:
        user.session_token = token
    return user


def is_live(token: str) -> bool:
    """Tell whether the session with this token still signs its user in (for open streams)."""
    return db.session.scalar(
        db.select(UserSession.id).join(User, User.id == UserSession.user_id).where(
            UserSession.token_hash == _hash(token), UserSession.generation == User.session_generation,
            User.active.is_(True))) is not None


def session_identifier() -> str:
    """Flask-Login's "strong" protection identifier, from the peer address and the user agent.

    Flask-Login's own reads X-Forwarded-For, which any client can set; `request.remote_addr` is
    the peer, or the client a trusted proxy names when PROXY_FIX_HOPS is set (Werkzeug's ProxyFix).
    """
    agent = request.headers.get("User-Agent", "")
    return sha512(f"{request.remote_addr}|{agent}".encode()).hexdigest()
