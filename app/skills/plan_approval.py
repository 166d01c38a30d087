"""Plan approval: the agent shows its plan and waits; approving it sends the agent the approval prompt."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.toolsets import FunctionToolset

from app.runtime.contract import ASKS_USER, CARD_KEY, TRUSTED_RESULT_KEY, Skill, SkillContext

PLAN_CHARS = 20_000


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    approval_prompt: str = Field(
        "The user approved your plan. Carry it out now, step by step, and say briefly what you did.",
        min_length=1, max_length=4_000, title="Approval prompt", json_schema_extra={"widget": "textarea"})
    """Instructions the agent gets for the turn that follows an approval (for example: carry out the plan and
    report after each step)."""

    when_to_plan: str = Field(
        "Before you change anything or start work of several steps, write a short plan in Markdown and "
        "submit it with submit_plan_for_approval. Do nothing else until the user approves it.",
        max_length=4_000, title="When to plan", json_schema_extra={"widget": "textarea"})
    """Tells the agent when to submit a plan. Leave it empty to let the agent judge from the tool alone."""


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    toolset = FunctionToolset(instructions=config.when_to_plan or None)

    # The result is the user's own decision.
    @toolset.tool_plain(metadata={ASKS_USER: True, TRUSTED_RESULT_KEY: True})
    def submit_plan_for_approval(plan: str) -> str:
        """Show your plan (Markdown) to the user and end your turn until they approve it or ask for changes.
        The result is "approved", or the changes they want: then submit a revised plan."""
        if not plan.strip():
            raise ModelRetry("Write the plan you want approved.")
        if len(plan) > PLAN_CHARS:
            raise ModelRetry(f"Keep the plan under {PLAN_CHARS:,} characters.")
        # The approval prompt travels with the call, so the run that resumes it needs no lookup.
        raise CallDeferred({CARD_KEY: "plan", "approval_prompt": config.approval_prompt}, kind="question")

    return toolset


skill = Skill(name="plan_approval", title="Plan approval", config=Config, build=build,
              description=__doc__.strip())
