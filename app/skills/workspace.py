"""Workspace tools: the agent builds in Skilldesk for its user — tables, fields, rows, agents, skills, triggers.

Each tool is a thin call into the workspace services (`Workspace`, which app/workspace/ registers in its
init_app: that area stands above the skills), over the same domain functions the pages use, so the
acting user's permissions are checked in one place, at each call: a refusal is a failed step
(`ToolFailed`), a correctable mistake asks the model again (`ModelRetry`). Creation reuses exact-name
matches and asks before changing them; sample data needs the user's own "example", "demo" or
"sample". Row tools per table (`create/update/delete_rows_in_table_<id>`) are loaded by
describe_table or create_table and stay for the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import DynamicToolset, FunctionToolset

from app.runtime.contract import (
    GROUP_KEY,
    OFFLINE_PATTERNS,
    TRUSTED_RESULT_KEY,
    Invalid,
    Refused,
    Skill,
    SkillContext,
    ToolGroup,
    mutation,
)

INSTRUCTIONS = (
    "You build in Skilldesk for the user with the workspace tools, within their permissions. Look things up "
    "(list_tables, describe_table, list_agents, list_triggers) before changing them. Creating something that "
    "exists by name reuses it: when the result lists differences, report them and ask before changing, unless "
    "the user already asked for those changes. Never invent records unless the user asked for an example, "
    "demo or sample. Report only what the tool results say was done."
)

# How the offline model reads a plain request ("create a table Contacts with name and email"): tool metadata.
OFFLINE_CREATE_TABLE = {OFFLINE_PATTERNS: (
    r"\b(?:create|make|add|build)\s+(?:me\s+)?(?:a|an|the)?\s*(?:new\s+)?table\s+(?:called\s+|named\s+)?"
    r"[\"“']?(?P<label>[\w][\w ]*?)[\"”']?(?:\s+with\s+(?:the\s+)?(?:fields\s+)?(?P<fields>[^.?!]+?))?"
    r"(?:\s+fields)?\s*[.?!]?$",
)}


# The schema and change tools answer in the server's words (names, fields, summaries the admins wrote);
# list_rows does not: rows hold what anyone with access wrote.
TRUSTED = {TRUSTED_RESULT_KEY: True}


class RowTools(Protocol):
    """A run's per-table row tools: `load` a table's tools for the rest of the run; `toolset` is a DynamicToolset
    function."""

    def load(self, name: str) -> None: ...
    def toolset(self, ctx: Any) -> Any: ...


@runtime_checkable
class Workspace(Protocol):
    """The workspace services these tools call, each with the acting user's id first (`ctx.service("workspace")`).

    Each raises `Refused` for what the user may not do and `Invalid` for a mistake the model can fix.
    """

    def list_tables(self, user_id: int | None, search: str = "") -> dict[str, Any]: ...
    def describe_table(self, user_id: int | None, name: str) -> Any: ...
    def table_summary(self, definition: Any) -> dict[str, Any]: ...
    def create_table(self, user_id: int | None, label: str, fields: list[dict[str, Any]], description: str = "",
                     name: str | None = None, confirm: bool = False, sample_rows: list[dict[str, Any]] | None = None,
                     sample_data: bool = False, prompt: str | None = None) -> dict[str, Any]: ...
    def update_table(self, user_id: int | None, name: str, changes: dict[str, Any]) -> dict[str, Any]: ...
    def list_rows(self, user_id: int | None, name: str, match: str = "", limit: int = 20) -> str: ...
    def list_agents(self, user_id: int | None) -> dict[str, Any]: ...
    def create_agent(self, user_id: int | None, name: str, instructions: str = "", description: str = "",
                     skills: list[dict[str, Any]] | None = None, roles: list[str] | None = None,
                     confirm: bool = False) -> dict[str, Any]: ...
    def update_agent(self, user_id: int | None, name: str, changes: dict[str, Any]) -> dict[str, Any]: ...
    def list_triggers(self, user_id: int | None) -> dict[str, Any]: ...
    def create_trigger(self, user_id: int | None, values: dict[str, Any], confirm: bool = False) -> dict[str, Any]: ...
    def update_trigger(self, user_id: int | None, name: str, changes: dict[str, Any]) -> dict[str, Any]: ...
    def row_tools(self, user_id: int | None, run_id: str | None, max_created_rows: int,
                  guard: Callable[[Callable[[], Any]], Any], in_app: Callable[[], Any]) -> RowTools: ...


class FieldSpec(BaseModel):
    """A field of a new table."""

    model_config = ConfigDict(extra="forbid")

    name: str
    label: str | None = None
    kind: str = "text"
    required: bool = False
    choices: list[str] | None = None


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    max_created_rows: int = Field(100, ge=1, le=1000, title="Rows created per table per turn")
    """The most rows the agent may create in one table during one user turn, whatever tools it uses."""


def _prompt(ctx: RunContext[Any]) -> str:
    prompt = ctx.prompt
    return prompt if isinstance(prompt, str) else " ".join(p for p in prompt or [] if isinstance(p, str))


def build(config: Config, ctx: SkillContext) -> list:
    def guard(call: Callable[[], Any]) -> Any:
        with ctx.app_context():
            try:
                return call()
            except Refused as refused:
                raise ToolFailed(str(refused)) from None
            except Invalid as invalid:
                raise ModelRetry(str(invalid)) from None

    workspace: Workspace = ctx.service("workspace")
    row_tools = workspace.row_tools(ctx.user_id, ctx.run_id, config.max_created_rows, guard, ctx.app_context)
    user = ctx.user_id
    toolset = FunctionToolset(instructions=INSTRUCTIONS)

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "data", **TRUSTED})
    def list_tables(search: str = "") -> dict[str, Any]:
        """List (find) the data tables you can read, those whose name or label contains `search` when given."""
        return guard(lambda: workspace.list_tables(user, search))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "data", **TRUSTED})
    def describe_table(table: str) -> dict[str, Any]:
        """Describe a table (by name or label): its id, fields and kinds; loads its row tools."""
        def describe() -> dict[str, Any]:
            definition = workspace.describe_table(user, table)
            row_tools.load(definition.name)
            return {**workspace.table_summary(definition),
                    "row_tools": [f"{verb}_rows_in_table_{definition.id}" for verb in ("create", "update", "delete")]}
        return guard(describe)

    @toolset.tool(sequential=True, metadata={GROUP_KEY: "data", **mutation("create", "table"), **TRUSTED,
                                             **OFFLINE_CREATE_TABLE})
    def create_table(run: RunContext[Any], label: str, fields: list[FieldSpec], description: str = "",
                     confirm: bool = False, sample_rows: list[dict[str, Any]] | None = None,
                     sample_data: bool = False) -> dict[str, Any]:
        """Create (make, add, new) a data table with fields [{name, label, kind, required, choices}]; kinds:
        text, long_text, integer, decimal, boolean, date, datetime, choice, link. A table of the same name is
        reused, not changed: set confirm=true only when the user agreed to the listed differences.
        sample_rows (with sample_data=true) only when the user asked for an example, demo or sample."""
        def create() -> dict[str, Any]:
            specs = [spec.model_dump(exclude_none=True) for spec in fields]
            result = workspace.create_table(user, label, specs, description, confirm=confirm, sample_rows=sample_rows,
                                            sample_data=sample_data, prompt=_prompt(run))
            if "name" in result:
                row_tools.load(result["name"])
            return result
        return guard(create)

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "data", **mutation("update", "table", destructive=True),
                                                   **TRUSTED})
    def update_table(table: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Update (change, rename) a table: changes may hold label, description, permissions ({action: [roles]}),
        add_fields ([{name, label, kind, ...}]) and change_fields ({field: {name, label, required, choices}})."""
        return guard(lambda: workspace.update_table(user, table, changes))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "data"})
    def list_rows(table: str, match: str = "", limit: int = 20) -> str:
        """List (show, search) rows of a table, those containing `match` in any field when given."""
        return guard(lambda: workspace.list_rows(user, table, match, limit))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "automation", **TRUSTED})
    def list_agents() -> dict[str, Any]:
        """List the agents with their skills, and the installed skills (admin only)."""
        return guard(lambda: workspace.list_agents(user))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "automation", **mutation("create", "agent"), **TRUSTED})
    def create_agent(name: str, instructions: str = "", description: str = "",
                     skills: list[dict[str, Any]] | None = None, roles: list[str] | None = None,
                     confirm: bool = False) -> dict[str, Any]:
        """Create an agent with skills [{name, config}] (admin only). An agent of the same name is reused, not
        changed: set confirm=true only when the user agreed to the listed differences."""
        return guard(lambda: workspace.create_agent(user, name, instructions, description, skills, roles, confirm))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "automation",
                                                   **mutation("update", "agent", destructive=True), **TRUSTED})
    def update_agent(agent: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Update an agent by name: changes may hold name, description, instructions, roles, max_requests and
        skills (the whole list, [{name, config}]) (admin only)."""
        return guard(lambda: workspace.update_agent(user, agent, changes))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "automation", **TRUSTED})
    def list_triggers() -> dict[str, Any]:
        """List the triggers that start agents on table events, webhooks and schedules (admin only)."""
        return guard(lambda: workspace.list_triggers(user))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "automation", **mutation("create", "trigger"),
                                                   **TRUSTED})
    def create_trigger(settings: dict[str, Any], confirm: bool = False) -> dict[str, Any]:
        """Create a trigger (admin only): settings name, kind (event, webhook, schedule), table, events (insert,
        update, delete), cron, agent (by name), run_as (an email), prompt, active, write_back_field. A trigger of
        the same name is reused: confirm=true only when the user agreed to the listed differences."""
        return guard(lambda: workspace.create_trigger(user, settings, confirm))

    @toolset.tool_plain(sequential=True, metadata={GROUP_KEY: "automation",
                                                   **mutation("update", "trigger", destructive=True), **TRUSTED})
    def update_trigger(trigger: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Update a trigger by name (admin only); changes take the settings create_trigger takes."""
        return guard(lambda: workspace.update_trigger(user, trigger, changes))

    return [toolset, DynamicToolset(row_tools.toolset, per_run_step=True)]


def _admin(ctx: SkillContext) -> bool:
    return ctx.role == "admin"  # a routing hint only: each tool reads the user's role again and refuses


skill = Skill(name="workspace", title="Workspace tools", config=Config, build=build,
              description=__doc__.strip().split("\n")[0],
              tool_groups=(ToolGroup("data", "Tables, fields and rows"),
                           ToolGroup("automation", "Agents, skills and triggers", can_use=_admin)))
