"""MCP sessions: one per client that initialized with an agent's MCP server, in the database so any worker serves it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import UTCDateTime, utcnow


class McpSession(db.Model):
    """A session of the Streamable HTTP transport; the client holds its id (`Mcp-Session-Id`), we keep its hash."""

    __tablename__ = "mcp_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # A session belongs to the token that opened it: another token (even of the same user) gets 404.
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    protocol_version: Mapped[str] = mapped_column(String(20))
    client: Mapped[str] = mapped_column(String(200), default="")
    # The `ask` calls under way: {JSON-RPC request id: run id}, so that notifications/cancelled can stop one.
    calls: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self) -> str:
        return f"<McpSession {self.id} agent={self.agent_id}>"
