"""Turn log: an example third-party skill that uses every hook of the Skill contract.

- `build` gives the agent a tool (`shout`);
- `pick_model` runs the conversation on the model configuration named in the settings;
- `finish_turn` adds a notice to the transcript, in the transaction that stores the turn;
- `after_turn` notes the ended turn once it is stored (a real skill would queue a job here).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.toolsets import FunctionToolset

from app.extensions import db
from app.models import Agent, Conversation, Message, ModelConfig
from app.runtime.contract import Skill, SkillContext, TurnEnd

# What `after_turn` saw: (conversation id, status). A real skill would queue a job instead.
ENDED: list[tuple[int, str]] = []


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    model: str = Field("", title="Model", max_length=80)
    """The name of the model configuration the conversation runs on; empty: the agent's own."""

    notice: bool = Field(True, title="Add a notice")
    """Add a notice to the transcript after every turn."""


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    toolset = FunctionToolset()

    @toolset.tool_plain
    def shout(text: str) -> str:
        """Say the text in capitals."""
        return text.upper()

    return toolset


def pick_model(config: Config, agent: Agent, conversation: Conversation) -> ModelConfig | None:
    if not config.model:
        return None
    return db.session.scalar(db.select(ModelConfig).where(ModelConfig.name == config.model))


def finish_turn(config: Config, end: TurnEnd) -> None:
    if config.notice:
        notice = Message(conversation_id=end.conversation_id, role="notice", run_id=end.run_id,
                         content=f"Turn log: the turn {end.status}.")
        db.session.add(notice)
        end.show(notice)


def after_turn(config: Config, end: TurnEnd) -> None:
    ENDED.append((end.conversation_id, end.status))


skill = Skill(name="turn_log", title="Turn log", config=Config, build=build, description=__doc__.splitlines()[0],
              pick_model=pick_model, finish_turn=finish_turn, after_turn=after_turn)
