"""Model picker: the user picks, in the chat composer, one of the models the admin allowed for this agent.

The choice is stored on the conversation (`Conversation.model_config_id`), which the runtime reads
when it prepares the next turn; the turn already running keeps its model.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.extensions import db
from app.models import Agent, Conversation, ModelConfig
from app.runtime.contract import Skill, SkillContext

NAME = "model_picker"


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    models: list[str] = Field(default_factory=list, title="Models", validate_default=True)
    """The model configurations the user may choose from, one per line, by name or id. The agent's own
    model is always offered too, as the default."""

    @field_validator("models")
    @classmethod
    def some_models(cls, value: list[str]) -> list[str]:
        entries = [entry.strip() for entry in value if entry.strip()]
        if not entries:
            raise ValueError("Name at least one model configuration the user may choose.")
        if any(len(entry) > 80 for entry in entries):
            raise ValueError("Each line is one model configuration name (at most 80 characters) or id.")
        return list(dict.fromkeys(entries))


@dataclass(frozen=True)
class Picker:
    """What the composer's dropdown shows: the agent's default, the allowed models, the current pick."""

    default_name: str
    choices: list[ModelConfig]
    current: int | None


def build(config: Config, ctx: SkillContext) -> None:
    # The picker changes the chat, not the agent's tools: the runtime applies the stored choice.
    return None


def _find(reference: str) -> ModelConfig | None:
    if reference.isdigit():
        return db.session.get(ModelConfig, int(reference))
    return db.session.scalar(db.select(ModelConfig).where(ModelConfig.name == reference))


def allowed_models(agent: Agent | None) -> list[ModelConfig] | None:
    """Return the model configurations the admin allowed for the agent, or None when it has no picker."""
    entries = [entry for entry in (agent.skills or []) if entry.get("name") == NAME] if agent else []
    if not entries:
        return None
    found: dict[int, ModelConfig] = {}
    for entry in entries:
        config = skill.parse(entry.get("config"))
        for reference in config.models:
            model = _find(reference)
            if model is not None:
                found.setdefault(model.id, model)
    return list(found.values())


def pick_model(config: Config, agent: Agent, conversation: Conversation) -> ModelConfig | None:
    """Return the conversation's pick while the admin still allows it for this agent (the `pick_model` hook)."""
    if not conversation.model_config_id:
        return None
    allowed = {model.id for model in allowed_models(agent) or []}
    if conversation.model_config_id not in allowed:
        return None
    return db.session.get(ModelConfig, conversation.model_config_id)


def picker_for(conversation: Conversation | None) -> Picker | None:
    """Return the dropdown of a conversation, or None when its agent offers no model picker."""
    agent = conversation.agent if conversation is not None else None
    choices = allowed_models(agent)
    if choices is None:
        return None
    default = agent.model_config or db.session.scalar(
        db.select(ModelConfig).where(ModelConfig.is_default.is_(True)))
    picked = conversation.model_config_id
    current = picked if any(model.id == picked for model in choices) else None
    return Picker(default.name if default else "Built-in offline model", choices, current)


def choose_model(conversation: Conversation, raw: str) -> str | None:
    """Store the user's pick for the conversation's next turns, or return why it is not allowed.

    An empty choice goes back to the agent's own model. The caller commits.
    """
    choices = allowed_models(conversation.agent)
    if choices is None:
        return "This agent does not let you choose its model."
    raw = (raw or "").strip()
    if not raw:
        conversation.model_config_id = None
        return None
    chosen = next((model for model in choices if str(model.id) == raw), None)
    if chosen is None:
        return "Choose one of the models offered for this agent."
    conversation.model_config_id = chosen.id
    return None


skill = Skill(name=NAME, title="Model picker", config=Config, build=build, gives_tools=False, pick_model=pick_model,
              description="Let the user pick, in the chat, one of the models allowed for this agent.")
