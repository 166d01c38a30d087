"""Tool approval: chosen tools of this agent run only after the user allows each call in the chat."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

from app.runtime.contract import ASKS_USER, Skill, SkillContext


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    tools: list[str] = Field(["*"], min_length=1, max_length=100, title="Tools")
    """The tools that need approval, one name per line. Shell-style patterns work: * is every tool of this
    agent, http_* every tool whose name starts with http_. Tools that ask the user something never need it."""

    allow_always: bool = Field(True, title="Offer “Always in this chat”")
    """Let the user allow a tool for the rest of a chat, so later calls of it there need no approval."""

    @field_validator("tools")
    @classmethod
    def names(cls, value: list[str]) -> list[str]:
        cleaned = [name.strip() for name in value if name.strip()]
        if not cleaned:
            raise ValueError("Name at least one tool, or * for every tool.")
        if any(len(name) > 200 for name in cleaned):
            raise ValueError("Tool names are at most 200 characters.")
        return cleaned


@dataclass
class ApprovalGate(ApprovalRequiredToolset[Any]):
    """pydantic-ai's approval wrapper, with the card's options attached to every request it makes."""

    card: dict[str, Any] = field(default_factory=dict)

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: Any) -> Any:
        if not ctx.tool_call_approved and self.approval_required_func(ctx, tool.tool_def, tool_args):
            raise ApprovalRequired(dict(self.card))
        return await self.wrapped.call_tool(name, tool_args, ctx, tool)


@dataclass
class RequireApproval(AbstractCapability[Any]):
    """Wrap the agent's assembled toolset so that matching tools need approval."""

    patterns: tuple[str, ...]
    allow_always: bool = True

    def needs_approval(self, ctx: RunContext[Any], tool_def: ToolDefinition, args: dict[str, Any]) -> bool:
        """Tell whether a call of this tool waits for the user."""
        if (tool_def.metadata or {}).get(ASKS_USER):
            return False
        return any(fnmatchcase(tool_def.name, pattern) for pattern in self.patterns)

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return ApprovalGate(toolset, self.needs_approval, card={"allow_always": self.allow_always})


def build(config: Config, ctx: SkillContext) -> RequireApproval:
    return RequireApproval(patterns=tuple(config.tools), allow_always=config.allow_always)


skill = Skill(name="tool_approval", title="Tool approval", config=Config, build=build,
              description=__doc__.strip(), gives_tools=False)
