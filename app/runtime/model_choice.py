"""Which model a turn runs on: a skill's pick (through `pick_model`), else the agent's, else the default."""

from __future__ import annotations

from app.extensions import db
from app.models import Agent, Conversation, ModelConfig
from app.runtime.model_spec import ModelSpec
from app.runtime.skill import configured_skills


def model_spec_for(agent: Agent, conversation: Conversation | None = None) -> ModelSpec:
    """Return the model a turn runs on: a skill's pick for the conversation, the agent's, else the default."""
    config = _picked(agent, conversation) if conversation is not None else None
    if config is None and agent.model_config_id:
        config = db.session.get(ModelConfig, agent.model_config_id)
    if config is None:
        config = db.session.scalar(db.select(ModelConfig).where(ModelConfig.is_default.is_(True)))
    return ModelSpec.of(config)


def _picked(agent: Agent, conversation: Conversation) -> ModelConfig | None:
    for skill, settings in configured_skills(agent.skills or []):
        if skill.pick_model is not None:
            choice = skill.pick_model(settings, agent, conversation)
            if choice is not None:
                return choice
    return None
