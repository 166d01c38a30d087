"""Personal API tokens: a user's own keys to the JSON API, the OpenAI-compatible API and MCP, stored as hashes only."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import JSON, Column, ForeignKey, String, Table, true
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

# The lifetimes a token may be given, in days, and the highest rate limit (requests per minute).
EXPIRY_DAYS = (7, 30, 90, 365)
MAX_RATE_LIMIT = 10_000
# read: GET on /api/; chat: also what writes on /api/; openai: /v1/; mcp: /mcp/<agent>.
TOKEN_SCOPES = ("read", "chat", "openai", "mcp")
# A token is this prefix and 43 URL-safe characters (256 random bits); the output guardrails know the form.
TOKEN_PREFIX = "sdk_"
TOKEN_FORM = re.compile(r"(?<![A-Za-z0-9_-])sdk_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")

# The agents a token names when it does not open every agent its user may use.
token_agents = Table(
    "api_token_agents", db.metadata,
    Column("token_id", ForeignKey("api_tokens.id", ondelete="CASCADE"), primary_key=True),
    Column("agent_id", ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True, index=True),
)


class ApiToken(db.Model):
    """A token of one user; the secret is shown once, at creation, and only its SHA-256 is kept."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The first characters of the token, so that its owner can tell tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    scopes: Mapped[list] = mapped_column(JSON, default=lambda: ["read"])
    # False: only the agents in `agents` (an agent deleted leaves the token with fewer, never with all).
    all_agents: Mapped[bool] = mapped_column(default=True, server_default=true())
    # Requests per minute on /v1/ and /mcp/; None: the site's TOKEN_RATE_LIMIT.
    rate_limit: Mapped[int | None]
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    agents = relationship("Agent", secondary=token_agents, lazy="selectin", order_by="Agent.name")
    user = relationship("User", lazy="joined", innerjoin=True)

    def allows(self, scope: str) -> bool:
        """Tell whether the token has a scope (`chat` includes `read`)."""
        scopes = self.scopes or []
        return scope in scopes or (scope == "read" and "chat" in scopes)

    def opens(self, agent) -> bool:
        """Tell whether the token names this agent (every agent, or it is one of the chosen ones)."""
        return self.all_agents or any(chosen.id == agent.id for chosen in self.agents)

    @property
    def live(self) -> bool:
        return self.revoked_at is None and self.expires_at > utcnow()

    def __repr__(self) -> str:
        return f"<ApiToken {self.id} user={self.user_id} {','.join(self.scopes or [])}>"


__all__ = ["TOKEN_FORM", "TOKEN_PREFIX", "TOKEN_SCOPES", "ApiToken", "token_agents"]
