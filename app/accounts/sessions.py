"""Revocable sign-in sessions: each sign-in is a row with a random token, and the cookies carry the token.

Flask-Login keeps `User.get_id()` in the session cookie and the remember-me cookie; ours is a new
random token per sign-in (stored as a SHA-256 hash), never the user's id. So:
- every sign-in gets its own token (the remember-me cookie differs across sign-ins);
- signing out deletes that row: a copy of either cookie taken before no longer signs anyone in;
- a new password, a new role, a deactivation and "Sign out everywhere" move the user's
  `session_generation` on (`app/models/users.py`), which ends every session of that user at once.

Loading the signed-in user is one indexed query, and its answer is kept for `CACHE_SECONDS` in this
process (a copy of the row's columns, made into a clean object of each request's session without a
query) for the requests that change nothing (GET: pages, streams), so they do not each read the same
rows again; a request that may write reads the row. A change made in this process (sign-out, a new
generation, any update of the user) drops the copy at once; one made in another process counts within
`CACHE_SECONDS`.
"""

from __future__ import annotations

import copy
import hashlib
import secrets
import threading
import time
from hashlib import sha512

from flask import request
from flask_login import current_user, login_user, logout_user
from sqlalchemy import ColumnElement, event, inspect
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.base import NEVER_SET, NO_VALUE

from app.extensions import db
from app.models import User, UserSession

CACHE_SECONDS = 1.0
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")

_cache: dict[str, tuple[float, int, dict]] = {}  # token hash -> (expiry, user id, the user's column values)
_cache_lock = threading.Lock()
_COLUMNS = tuple(column.key for column in inspect(User).column_attrs)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def forget(user_id: int | None = None, token_hash: str | None = None) -> None:
    """Drop this process's copies of a user's sign-in (all of them), or of one session."""
    with _cache_lock:
        for key in [key for key, (_expiry, owner, _values) in _cache.items()
                    if key == token_hash or owner == user_id]:
            del _cache[key]


def _generation_moved(target: User, value, oldvalue, _initiator) -> None:
    # Fires on assignment only; an object being built (from a row or a copy) has no old value.
    if target.id is not None and oldvalue not in (NO_VALUE, NEVER_SET) and oldvalue != value:
        forget(user_id=target.id)


def _user_written(_mapper, _connection, target: User) -> None:
    forget(user_id=target.id)


event.listen(User.session_generation, "set", _generation_moved)
event.listen(User, "after_update", _user_written)  # a change made here is never read back stale here


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
        forget(token_hash=_hash(token))
    logout_user()


def sign_out_everywhere(user: User) -> None:
    """End every session of the user, this one included; the caller commits."""
    user.session_generation = (user.session_generation or 0) + 1
    db.session.execute(db.delete(UserSession).where(UserSession.user_id == user.id))
    if current_user.is_authenticated and current_user.id == user.id:
        logout_user()


def load_user(token: str) -> User | None:
    """The active user whose current-generation session has this token, or None (at most one indexed query)."""
    digest = _hash(token)
    with _cache_lock:
        cached = _cache.get(digest)
    # Only a request that changes nothing uses the copy: one that may write the user (its preferences, a
    # password) reads the row as it is, so no change made meanwhile elsewhere is written over.
    if cached is not None and cached[0] > time.monotonic() and request.method in SAFE_METHODS:
        user = _from_copy(cached[2])
    else:
        user = db.session.scalar(
            db.select(User).join(UserSession, UserSession.user_id == User.id).where(
                UserSession.token_hash == digest, UserSession.generation == User.session_generation,
                User.active.is_(True)))
        if user is None:
            return None
        values = {key: copy.deepcopy(getattr(user, key)) for key in _COLUMNS}
        with _cache_lock:
            _cache[digest] = (time.monotonic() + CACHE_SECONDS, user.id, values)
            if len(_cache) > 10_000:  # expired copies of sessions no longer used
                now = time.monotonic()
                for key in [key for key, (expiry, _owner, _values) in _cache.items() if expiry <= now]:
                    del _cache[key]
    user.session_token = token
    return user


def _from_copy(values: dict) -> User:
    """A clean, persistent User of this request's session made from a copy of its columns (no query)."""
    identity = db.session.identity_map.get(db.session.identity_key(User, values["id"]))  # loaded already
    if identity is not None:
        return identity
    user = User(**copy.deepcopy(values))
    make_transient_to_detached(user)
    db.session.add(user)
    return user


def live_session(token: str) -> ColumnElement[bool]:
    """The condition a `UserSession` row meets when it is this token's and still signs its user in."""
    return (UserSession.token_hash == _hash(token)) & (UserSession.user_id == User.id) & \
        (UserSession.generation == User.session_generation) & User.active.is_(True)


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
