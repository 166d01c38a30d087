"""Agents and the model configurations they run on."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String, Text, event, select
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

PROVIDERS = {
    "offline": "Built-in offline model",
    "openai": "OpenAI (Responses API)",
    "openai-chat": "OpenAI (Chat Completions)",
    "openai-compatible": "OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio)",
    "anthropic": "Anthropic",
    "groq": "Groq",
}

MODEL_ROLES = ("orchestration", "documentation", "utility", "verifier", "summary", "title")  # app/runtime/profiles.py


class ModelConfig(db.Model):
    """A provider and a model; secrets stay in the environment variable it names."""

    __tablename__ = "model_configs"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    provider: Mapped[str] = mapped_column(String(30))
    model_name: Mapped[str] = mapped_column(String(120))
    base_url: Mapped[str | None] = mapped_column(String(500))
    api_key_env: Mapped[str | None] = mapped_column(String(100))
    context_window: Mapped[int] = mapped_column(default=32_000)
    max_tokens: Mapped[int | None]
    temperature: Mapped[float | None]
    timeout: Mapped[float] = mapped_column(default=60.0)
    # How often the provider's SDK may send a failed request again, within the timeout.
    retries: Mapped[int] = mapped_column(default=0, server_default="0")
    # Per-role overrides: {"title": {"max_tokens": 60, "temperature": 0.2, "timeout": 20}, ...}
    profiles: Mapped[dict] = mapped_column(JSON, default=dict)
    is_default: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self) -> str:
        return f"<ModelConfig {self.id} {self.provider}:{self.model_name}>"


class Agent(db.Model):
    """An agent as an admin configured it: instructions, model, audience and skills."""

    __tablename__ = "agents"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    description: Mapped[str] = mapped_column(String(300), default="")
    instructions: Mapped[str] = mapped_column(Text, default="")
    model_config_id: Mapped[int | None] = mapped_column(ForeignKey("model_configs.id", ondelete="SET NULL"))
    roles: Mapped[list] = mapped_column(JSON, default=lambda: ["admin", "user"])
    # Ordered: [{"name": "clock", "config": {...}}, ...]
    skills: Mapped[list] = mapped_column(JSON, default=list)
    max_requests: Mapped[int] = mapped_column(default=25)
    # Destructive tools that run without asking even after untrusted content entered the turn, and who set
    # that when: {"tools": [...], "set_by": email, "set_at": iso time} (app/runtime/untrusted.py).
    never_ask: Mapped[dict | None] = mapped_column(JSON, default=None)
    # The agent's name for other tools: its model id in the OpenAI-compatible API and its MCP path
    # (/mcp/<slug>). Made from the name when the agent is created, and kept when the name changes.
    slug: Mapped[str] = mapped_column(String(80), unique=True)
    # Who may decide on this agent's waiting tool calls besides the chat's owner (and a trigger's owner):
    # every active user of these roles, and these users.
    approver_roles: Mapped[list] = mapped_column(JSON, default=list)
    approver_ids: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    model_config: Mapped[ModelConfig | None] = relationship()

    def usable_by(self, user) -> bool:
        """Tell whether the user's role may chat with this agent."""
        return user.is_authenticated and user.role in (self.roles or [])

    def __repr__(self) -> str:
        return f"<Agent {self.id} {self.name!r}>"


def slug_of(name: str) -> str:
    """Return the URL-safe form of a name: lowercase ASCII letters, digits and single hyphens."""
    ascii_name = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name).strip("-")[:60].strip("-") or "agent"


@event.listens_for(Agent, "before_insert")
def _give_a_slug(_mapper, connection, agent: Agent) -> None:
    # Every way an agent is created (the editor, the seed, the Workspace tools, tests) gets a unique slug.
    if agent.slug:
        return
    base = slug_of(agent.name)
    taken = set(connection.scalars(select(Agent.slug).where(Agent.slug.like(f"{base}%"))))
    agent.slug = base if base not in taken else next(f"{base}-{n}" for n in range(2, len(taken) + 3)
                                                      if f"{base}-{n}" not in taken)
