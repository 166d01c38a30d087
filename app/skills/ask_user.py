"""Ask the user: the agent asks a question with options to choose from, and waits for the answer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.toolsets import FunctionToolset

from app.runtime.contract import ASKS_USER, CARD_KEY, TRUSTED_RESULT_KEY, Skill, SkillContext

QUESTION_CHARS = 1_000
OPTION_CHARS = 300


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    max_options: int = Field(6, ge=2, le=12, title="Most options")
    """The most options one question may offer; the agent is asked to narrow down when it offers more."""

    long_label_chars: int = Field(40, ge=10, le=200, title="Long labels")
    """Options longer than this (characters) are shown as a list to pick from with an Answer button,
    instead of one button per option."""


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    toolset = FunctionToolset()

    # The result is the user's own answer.
    @toolset.tool_plain(metadata={ASKS_USER: True, TRUSTED_RESULT_KEY: True})
    def ask_user_question(question: str, options: list[str]) -> str:
        """Ask the user a question and end your turn until they answer; use it when you cannot go on without
        their choice. Give a few short options (or none for an open question); they may also answer in their
        own words or ask to discuss it. The result is their answer."""
        question = question.strip()
        choices = list(dict.fromkeys(option.strip() for option in options if option.strip()))
        if not question:
            raise ModelRetry("Write the question you want to ask.")
        if len(question) > QUESTION_CHARS:
            raise ModelRetry(f"Keep the question under {QUESTION_CHARS} characters.")
        if len(choices) > config.max_options:
            raise ModelRetry(f"Offer at most {config.max_options} options.")
        if any(len(choice) > OPTION_CHARS for choice in choices):
            raise ModelRetry(f"Keep each option under {OPTION_CHARS} characters.")
        buttons = all(len(choice) <= config.long_label_chars for choice in choices)
        # The turn ends here; the answer comes back as this call's result in the run that resumes.
        raise CallDeferred({CARD_KEY: "question", "buttons": buttons}, kind="question")

    return toolset


skill = Skill(name="ask_user", title="Ask the user", config=Config, build=build, description=__doc__.strip())
