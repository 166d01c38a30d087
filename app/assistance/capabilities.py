"""What the assistant offers a signed-in user, for clients to read before they show assistant UI.

`enabled`: the admin switch (gate.py). `configured`: the user has an agent to chat with and that
agent has a model (its own or the instance's default). Features, each false when either is false:
`help` (answers), `streaming` (answers as they are written, over SSE), `proposals` (an agent the
user may use has the `ui_proposals` skill). A client that reads `proposals: false` hides the
proposal UI and sends no proposable list; Skilldesk's own pages do the same.
"""

from __future__ import annotations

from typing import Any

from app.assistance.gate import assistant_enabled
from app.extensions import db
from app.models import Agent, ModelConfig, User

PROPOSALS_SKILL = "ui_proposals"


def capabilities_of(user: User) -> dict[str, Any]:
    """Return `{"enabled", "configured", "features": {"help", "proposals", "streaming"}}` for the user."""
    enabled = assistant_enabled()
    has_default = db.session.scalar(db.select(ModelConfig.id).where(ModelConfig.is_default.is_(True))) is not None
    agents = [agent for agent in db.session.scalars(db.select(Agent)) if agent.usable_by(user)
              and (agent.model_config_id is not None or has_default)]
    configured = bool(agents)
    on = enabled and configured
    proposals = on and any(skill.get("name") == PROPOSALS_SKILL for agent in agents
                           for skill in (agent.skills or []) if isinstance(skill, dict))
    return {"enabled": enabled, "configured": configured,
            "features": {"help": on, "proposals": proposals, "streaming": on}}


def agent_offers_proposals(agent: Agent | None) -> bool:
    """Tell whether an agent has the proposal tools (and so whether a page should declare targets)."""
    if agent is None or not assistant_enabled():
        return False
    return any(isinstance(skill, dict) and skill.get("name") == PROPOSALS_SKILL for skill in agent.skills or [])
