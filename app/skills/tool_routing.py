"""Tool routing: the agent works in modes; the tools of the active mode are loaded, the others found by search.

Each mode names its active tool groups (`ToolGroup`, declared by the skills). The tools of the
active groups expose their full schemas; the other groups the user may use are deferred
(pydantic-ai `defer_loading`) and revealed by its tool search (`search_tools`). Calling a revealed
tool switches to the first mode that names its group. A revealed call whose arguments match the
full schema runs at once on the normal validated path; one that does not gets an ordinary result
`{changed: false, next_steps}` (no tool retry is spent) and stays listed in the instructions until
it is reissued. Groups the user may not use (`can_use`) are left out whatever the mode: a mode
never grants a permission. Tools run one after another, so a later call sees an earlier one's
result and mode. Tools of no group (other capabilities') and the always-active groups stay loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_ai import RunContext, ToolReturn
from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering, ToolSearch
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset

from app.runtime.contract import GROUP_KEY, ROUTING_ONLY_KEY, Skill, SkillContext, ToolGroup

# The validated arguments of a revealed call that did not match its schema: it is answered, not run.
_INCOMPLETE = "__skilldesk_incomplete_call__"


class Mode(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    name: str = Field(min_length=1, max_length=40, pattern=r"^[a-z][a-z0-9_]*$")
    """The mode's name (lowercase letters, digits, underscores), as the model reads it."""
    groups: list[str] = Field(default_factory=list, max_length=40)
    """The tool groups whose tools are loaded in this mode (a skill's name, or a group a skill declares)."""
    description: str = Field("", max_length=200)
    """What the mode is for, in a sentence the model reads."""


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    modes: list[Mode] = Field(default_factory=list, max_length=12)
    """The agent's modes, each naming its active tool groups; the first is where a run starts."""
    always_active: list[str] = Field(default_factory=lambda: ["docs", "knowledge"], max_length=20)
    """Tool groups loaded in every mode (the documentation search: the knowledge skill's group)."""

    @model_validator(mode="after")
    def unique_modes(self) -> Config:
        names = [mode.name for mode in self.modes]
        if len(names) != len(set(names)):
            raise ValueError("Two modes have the same name; give each mode its own name.")
        return self


def _args_schema(tool_def: Any) -> str:
    return json.dumps(tool_def.parameters_json_schema, ensure_ascii=False, separators=(",", ":"))[:1500]


@dataclass
class ToolRouting(AbstractCapability[Any]):
    """The modes of one run: which groups are loaded, deferred or hidden, and the calls to reissue."""

    config: Config
    context: SkillContext
    mode: str | None = None
    # Revealed calls answered `changed: false`, by tool name: the schema the model must follow.
    pending: dict[str, str] = field(default_factory=dict)
    switches: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode is None and self.config.modes:
            self.mode = self.config.modes[0].name

    # --- which group a tool is in, and what the user may see ---

    def group_of(self, name: str, tool_def: Any) -> str | None:
        return (tool_def.metadata or {}).get(GROUP_KEY) or self.context.group_of_tool.get(name)

    def permitted(self, group: str) -> bool:
        definition = self.context.tool_groups.get(group) or ToolGroup(group)
        try:
            return bool(definition.can_use(self.context))
        except Exception:  # a failing permission check denies
            return False

    def active_groups(self) -> set[str]:
        modes = {mode.name: mode for mode in self.config.modes}
        current = modes.get(self.mode or "")
        return set(self.config.always_active) | set(current.groups if current else [])

    def switch_for(self, group: str) -> None:
        """Switch to the first mode naming the group (a call to one of its revealed tools)."""
        if group in self.active_groups():
            return
        for mode in self.config.modes:
            if group in mode.groups:
                self.mode = mode.name
                self.switches.append(mode.name)
                return

    # --- pydantic-ai hooks ---

    def get_ordering(self) -> CapabilityOrdering:
        return CapabilityOrdering(wrapped_by=[ToolSearch])  # the search must see what this defers

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return RoutedToolset(wrapped=toolset, routing=self)

    def get_instructions(self):
        def instructions(ctx: RunContext[Any]) -> str:
            lines = [f"Tool modes: you are in the mode {self.mode!r}. Modes: " + "; ".join(
                f"{mode.name} ({mode.description or ', '.join(mode.groups)})" for mode in self.config.modes)
                + ". A mode only decides which tools are loaded; it never limits what you may do: find "
                  "the tools of other modes with search_tools and call them (the mode follows)."]
            if self.pending:
                lines.append("Calls to reissue with every required argument of their full schema: " + "; ".join(
                    f"{name} {schema}" for name, schema in self.pending.items()))
            return "\n".join(lines)
        return instructions

    async def on_tool_validate_error(self, ctx, *, call, tool_def, args, error):
        group = self.group_of(call.tool_name, tool_def)
        if not tool_def.defer_loading or group is None:
            raise error  # a loaded tool's invalid call is corrected the usual way (a retry)
        self.switch_for(group)
        self.pending[call.tool_name] = _args_schema(tool_def)
        return {_INCOMPLETE: True}

    async def wrap_tool_execute(self, ctx, *, call, tool_def, args, handler):
        if isinstance(args, dict) and args.get(_INCOMPLETE) is True:
            return ToolReturn(
                {"changed": False, "mode": self.mode, "next_steps": (
                    f"Nothing was done. {call.tool_name} is now loaded with its full schema; call it again "
                    f"with every required argument: {self.pending.get(call.tool_name, '')}")},
                metadata={ROUTING_ONLY_KEY: True})
        group = self.group_of(call.tool_name, tool_def)
        if group is not None and tool_def.defer_loading:
            self.switch_for(group)
        self.pending.pop(call.tool_name, None)
        return await handler(args)


@dataclass
class RoutedToolset(WrapperToolset[Any]):
    """The agent's tools as the active mode shows them: loaded, deferred for search, or left out."""

    routing: ToolRouting = field(kw_only=True)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, Any]:
        tools = await self.wrapped.get_tools(ctx)
        active = self.routing.active_groups()
        shown: dict[str, Any] = {}
        for name, tool in tools.items():
            tool_def = replace(tool.tool_def, sequential=True)  # one call after another
            group = self.routing.group_of(name, tool.tool_def)
            if group is not None:
                if not self.routing.permitted(group):
                    continue  # never shown, never searchable, whatever the mode
                if group not in active and name not in self.routing.pending:
                    tool_def = replace(tool_def, defer_loading=True)
            shown[name] = replace(tool, tool_def=tool_def)
        return shown


def build(config: Config, ctx: SkillContext) -> list[AbstractCapability[Any]] | None:
    if not config.modes:
        return None
    # The search runs here (keywords over names and descriptions), whatever the provider offers natively:
    # the same discovery for every model, and the `search_tools` results the routing reads.
    return [ToolRouting(config, ctx), ToolSearch(strategy="keywords")]


skill = Skill(name="tool_routing", title="Tool routing", config=Config, build=build, description=__doc__.strip(),
              gives_tools=False)
