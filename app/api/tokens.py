"""Personal API tokens: created, listed and revoked by their user (and revoked by an admin); hashed at rest;
scoped; limited to agents; they expire.

A token is `sdk_` and 43 URL-safe characters (256 random bits), sent as `Authorization: Bearer
<token>` to /api/, /v1/ and /mcp/ only. Only its SHA-256 is stored (a token has too much entropy to
guess, so a slow hash buys nothing), with its first characters so that its owner can tell tokens apart.
Scopes: `read` (GET on /api/), `chat` (read, and everything that writes on /api/: send messages, start
and delete conversations, change preferences), `openai` (/v1/) and `mcp` (/mcp/<agent>). A token
opens every agent its user may use, or only the agents it names. A revoked or expired token, or one
whose user is deactivated, is a 401; a token without the scope a route needs is a 403.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import timedelta

from flask import g

from app.extensions import db
from app.models import Agent, ApiToken, User
from app.models.base import utcnow
from app.models.tokens import EXPIRY_DAYS, MAX_RATE_LIMIT, TOKEN_PREFIX, TOKEN_SCOPES

PREFIX = TOKEN_PREFIX
MAX_TOKENS = 20
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# How stale `last_used_at` may be before a request writes it again: one write a minute per token at most.
LAST_USE_PRECISION = timedelta(minutes=1)


class TokenError(ValueError):
    """A token that cannot be created; the message says why."""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(user: User, name: str, scopes: str | Iterable[str], days: int,
                 agents: Iterable[Agent] | None = None, rate_limit: int | None = None) -> tuple[ApiToken, str]:
    """Create a token for the user; return it and its secret, which is never shown again. The caller commits.

    `scopes` is one scope or several; `agents` None opens every agent the user may use, else only those
    (each one the user may use); `rate_limit` is requests per minute (None: the site's default).
    """
    name = (name or "").strip()
    chosen = [scopes] if isinstance(scopes, str) else list(dict.fromkeys(scopes))
    if not name or len(name) > 80:
        raise TokenError("Give the token a name of 1 to 80 characters.")
    if not chosen or any(scope not in TOKEN_SCOPES for scope in chosen):
        raise TokenError(f"Choose scopes among {', '.join(TOKEN_SCOPES)}.")
    if days not in EXPIRY_DAYS:
        raise TokenError(f"A token expires after {', '.join(map(str, EXPIRY_DAYS))} days.")
    if rate_limit is not None and not 1 <= rate_limit <= MAX_RATE_LIMIT:
        raise TokenError(f"A rate limit is 1 to {MAX_RATE_LIMIT:,} requests per minute.")
    named = None if agents is None else list(agents)
    if named is not None and not named:
        raise TokenError("Choose at least one agent, or all of them.")
    if named is not None and any(not agent.usable_by(user) for agent in named):
        raise TokenError("Choose only agents you may use.")
    if len(tokens_of(user)) >= MAX_TOKENS:
        raise TokenError(f"You have {MAX_TOKENS} tokens; revoke one first.")
    secret = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(user_id=user.id, name=name, token_hash=_digest(secret), prefix=secret[:10], scopes=chosen,
                     all_agents=named is None, agents=named or [], rate_limit=rate_limit,
                     expires_at=utcnow() + timedelta(days=days))
    db.session.add(token)
    return token, secret


def tokens_of(user: User) -> list[ApiToken]:
    """Return the user's tokens that are not revoked, newest first (expired ones included)."""
    return list(db.session.scalars(db.select(ApiToken).where(ApiToken.user_id == user.id,
                                                             ApiToken.revoked_at.is_(None))
                                   .order_by(ApiToken.created_at.desc(), ApiToken.id.desc())))


def every_token():
    """Select every token of every user that is not revoked, newest first (for the admin's page)."""
    return (db.select(ApiToken).where(ApiToken.revoked_at.is_(None))
            .order_by(ApiToken.created_at.desc(), ApiToken.id.desc()))


def revoke_token(user: User, token_id: int) -> bool:
    """Revoke one of the user's tokens (any user's, for an admin); False when there is no such token.

    The caller commits.
    """
    token = db.session.get(ApiToken, token_id)
    mine = token is not None and (token.user_id == user.id or user.role == "admin")
    if not mine or token.revoked_at is not None:
        return False
    token.revoked_at = utcnow()
    return True


def user_for_bearer(header: str | None) -> User | None:
    """Return the user of a valid `Bearer` token (and note the token for the request), else None."""
    token = token_for_bearer(header)
    if token is None:
        return None
    g.api_token = token
    return token.user


def token_for_bearer(header: str | None) -> ApiToken | None:
    """Return the live token of a `Bearer` header whose user is active, else None."""
    if not header or not header.startswith("Bearer "):
        return None
    secret = header[len("Bearer "):].strip()
    if not secret.startswith(PREFIX) or len(secret) > 100:
        return None
    token = db.session.scalar(db.select(ApiToken).where(ApiToken.token_hash == _digest(secret)))
    return token if _user_of(token) is not None else None


def token_is_live(token_id: int) -> bool:
    """Tell whether the token still signs its user in (for open streams)."""
    return _user_of(db.session.get(ApiToken, token_id)) is not None


def note_use(token: ApiToken) -> None:
    """Record that the token was used now (at most once a minute: one small UPDATE of its own)."""
    now = utcnow()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USE_PRECISION:
        return
    # On a connection of its own: the request's session and its transaction are left as they were.
    with db.engine.begin() as connection:
        connection.execute(db.update(ApiToken).where(ApiToken.id == token.id).values(last_used_at=now))


def _user_of(token: ApiToken | None) -> User | None:
    # Revoked, expired, or its user gone or deactivated: the token signs no one in.
    if token is None or token.revoked_at is not None or token.expires_at <= utcnow():
        return None
    user = db.session.get(User, token.user_id)
    return user if user is not None and user.active else None


def request_token() -> ApiToken | None:
    """Return the token the current request signed in with, if it used one."""
    return g.get("api_token")


def opens_agent(agent: Agent | None) -> bool:
    """Tell whether the current request may use the agent: a session may; a token only if it names it."""
    token = request_token()
    return token is None or (agent is not None and token.opens(agent))


def opens_agent_id(agent_id: int | None) -> bool:
    """Tell whether the current request may reach what belongs to the agent with this id (see opened_agent_ids)."""
    opened = opened_agent_ids()
    return opened is None or agent_id in opened


def opened_agent_ids() -> list[int] | None:
    """The agents the current request's token is limited to, or None when it may reach every agent of its user.

    Lists and lookups of conversations, runs and waiting calls narrow to these, so a token that names
    some agents never reads, follows, deletes or decides anything of the others.
    """
    token = request_token()
    if token is None or token.all_agents:
        return None
    return [agent.id for agent in token.agents]
