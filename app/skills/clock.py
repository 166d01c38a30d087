"""Clock: the agent can tell the current date and time in a chosen time zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import ModelRetry
from pydantic_ai.toolsets import FunctionToolset

from app.runtime.contract import TRUSTED_RESULT_KEY, Skill, SkillContext


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    timezone: str = Field("UTC", max_length=64)
    """Time zone used when the user names none (an IANA name such as Europe/Rome)."""

    @field_validator("timezone")
    @classmethod
    def known_zone(cls, value: str) -> str:
        if value not in available_timezones() and value != "UTC":
            raise ValueError("Unknown time zone; use an IANA name such as Europe/Rome.")
        return value


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    toolset = FunctionToolset()

    @toolset.tool_plain(metadata={TRUSTED_RESULT_KEY: True})
    def current_time(timezone: str | None = None) -> str:
        """Tell the current date and time (clock), optionally in an IANA time zone such as Europe/Rome."""
        zone = timezone or config.timezone
        try:
            now = datetime.now(ZoneInfo(zone))
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise ModelRetry(f"Unknown time zone {zone!r}; use an IANA name such as Europe/Rome.") from error
        return now.strftime(f"%A %d %B %Y, %H:%M:%S ({zone})")

    return toolset


skill = Skill(name="clock", title="Clock", config=Config, build=build, description=__doc__.strip())
