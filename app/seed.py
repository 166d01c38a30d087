"""What a fresh install starts with: the built-in offline model as default, and a demo agent."""

from __future__ import annotations

from app.extensions import db
from app.models import Agent, ModelConfig

DEMO_INSTRUCTIONS = """You are the demo assistant of Skilldesk, talking with {{ user.name }} on {{ today }}.
Answer briefly. Use your tools when they help, and report their results exactly as they came back."""


def ensure_defaults() -> None:
    """Create the offline model configuration and the demo agent if the install has none; no commit."""
    if db.session.scalar(db.select(ModelConfig.id).limit(1)) is None:
        db.session.add(ModelConfig(name="Built-in offline model", provider="offline",
                                   model_name="skilldesk-offline", context_window=32_000, timeout=60,
                                   profiles={}, is_default=True))
    if db.session.scalar(db.select(Agent.id).limit(1)) is None:
        db.session.add(Agent(
            name="Demo assistant",
            description="A first agent to try Skilldesk with: it can tell the time.",
            instructions=DEMO_INSTRUCTIONS,
            roles=["admin", "user"],
            skills=[{"name": "clock", "config": {"timezone": "UTC"}}],
            max_requests=10,
        ))
