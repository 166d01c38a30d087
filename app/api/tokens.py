"""Personal API tokens: created, listed and revoked by their user; hashed at rest; scoped; they expire.

A token is `sdk_` and 43 URL-safe characters (256 random bits), sent as `Authorization: Bearer
<token>` to /api/ routes only. Only its SHA-256 is stored (a token has too much entropy to guess,
so a slow hash buys nothing), with its first characters so that its owner can tell tokens apart.
Scopes: `read` (GET only) and `chat` (read, and everything that writes: send messages, start and
delete conversations, change preferences). A revoked or expired token, or one whose user is
deactivated, is a 401; a read token asking to write is a 403 INSUFFICIENT_SCOPE.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from flask import g

from app.extensions import db
from app.models import ApiToken, User
from app.models.base import utcnow
from app.models.tokens import TOKEN_PREFIX, TOKEN_SCOPES

PREFIX = TOKEN_PREFIX
EXPIRY_DAYS = (7, 30, 90, 365)
MAX_TOKENS = 20
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class TokenError(ValueError):
    """A token that cannot be created; the message says why."""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(user: User, name: str, scope: str, days: int) -> tuple[ApiToken, str]:
    """Create a token for the user; return it and its secret, which is never shown again. The caller commits."""
    name = (name or "").strip()
    if not name or len(name) > 80:
        raise TokenError("Give the token a name of 1 to 80 characters.")
    if scope not in TOKEN_SCOPES:
        raise TokenError(f"The scope is one of {', '.join(TOKEN_SCOPES)}.")
    if days not in EXPIRY_DAYS:
        raise TokenError(f"A token expires after {', '.join(map(str, EXPIRY_DAYS))} days.")
    if len(tokens_of(user)) >= MAX_TOKENS:
        raise TokenError(f"You have {MAX_TOKENS} tokens; revoke one first.")
    secret = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(user_id=user.id, name=name, token_hash=_digest(secret), prefix=secret[:10], scope=scope,
                     expires_at=utcnow() + timedelta(days=days))
    db.session.add(token)
    return token, secret


def tokens_of(user: User) -> list[ApiToken]:
    """Return the user's tokens that are not revoked, newest first (expired ones included)."""
    return list(db.session.scalars(db.select(ApiToken).where(ApiToken.user_id == user.id,
                                                             ApiToken.revoked_at.is_(None))
                                   .order_by(ApiToken.created_at.desc(), ApiToken.id.desc())))


def revoke_token(user: User, token_id: int) -> bool:
    """Revoke one of the user's tokens; False when the user has no such token. The caller commits."""
    token = db.session.get(ApiToken, token_id)
    if token is None or token.user_id != user.id or token.revoked_at is not None:
        return False
    token.revoked_at = utcnow()
    return True


def user_for_bearer(header: str | None) -> User | None:
    """Return the user of a valid `Bearer` token (and note the token for the request), else None."""
    if not header or not header.startswith("Bearer "):
        return None
    secret = header[len("Bearer "):].strip()
    if not secret.startswith(PREFIX) or len(secret) > 100:
        return None
    token = db.session.scalar(db.select(ApiToken).where(ApiToken.token_hash == _digest(secret)))
    user = _user_of(token)
    if user is not None:
        g.api_token = token
    return user


def token_is_live(token_id: int) -> bool:
    """Tell whether the token still signs its user in (for open streams)."""
    return _user_of(db.session.get(ApiToken, token_id)) is not None


def _user_of(token: ApiToken | None) -> User | None:
    # Revoked, expired, or its user gone or deactivated: the token signs no one in.
    if token is None or token.revoked_at is not None or token.expires_at <= utcnow():
        return None
    user = db.session.get(User, token.user_id)
    return user if user is not None and user.active else None


def request_token() -> ApiToken | None:
    """Return the token the current request signed in with, if it used one."""
    return g.get("api_token")
