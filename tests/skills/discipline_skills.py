"""Small skills for the discipline tests (tool routing, action memory, answer checks), installed for one test.

They are registered in the app's skill registry as a plugin would be, and give tools in declared
groups: `rows` (data, mutations), `triggers` (automation, a mutation), `secrets` (admins only),
`docs` (the documentation search).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel
from pydantic_ai import ToolReturn
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.toolsets import FunctionToolset

from app.runtime.skill import Skill, ToolGroup
from app.runtime.tool_metadata import mutation


class NoConfig(BaseModel):
    pass


def _rows(config, ctx) -> FunctionToolset:
    toolset = FunctionToolset()
    log = ctx.extras.setdefault("log", [])

    @toolset.tool_plain(metadata=mutation("create", "row"))
    def add_rows(table: str, count: int, note: str = "") -> ToolReturn:
        """Add rows to a data table (insert records)."""
        if count < 0:
            raise ValueError("count must be positive")
        if count == 0:
            return ToolReturn({"changed": False, "reason": "nothing to add"})
        ids = list(range(1, count + 1))
        log.append(("add_rows", table, count))
        return ToolReturn({"changed": True, "row_ids": ids, "count": count, "table": table,
                           "values": [{"secret_cell": "Ada Lovelace"}]})

    @toolset.tool_plain(metadata=mutation("create", "row"))
    def import_rows(table: str, count: int) -> dict[str, Any]:
        """Import rows into a data table; stops after 2 rows."""
        return {"changed": True, "partial": True, "count": min(count, 2), "unfinished": f"{count - 2} rows left"}

    @toolset.tool_plain(metadata=mutation("create", "table"))
    def reuse_table(name: str) -> dict[str, Any]:
        """Create a data table, or reuse the one with that name."""
        return {"changed": False, "reused": True, "id": 7, "name": name}

    @toolset.tool_plain
    def count_rows(table: str) -> int:
        """Count the rows of a data table (read only)."""
        return sum(entry[2] for entry in log if entry[1] == table)

    return toolset


def _triggers(config, ctx) -> FunctionToolset:
    toolset = FunctionToolset()
    log = ctx.extras.setdefault("log", [])

    @toolset.tool_plain(metadata=mutation("create", "trigger"))
    def create_trigger(name: str, schedule: str) -> dict[str, Any]:
        """Create an automation trigger that runs an agent on a cron schedule."""
        log.append(("create_trigger", name, schedule))
        return {"changed": True, "id": 3, "name": name, "seen_before": len(log) - 1}

    return toolset


def _secrets(config, ctx) -> FunctionToolset:
    toolset = FunctionToolset()

    @toolset.tool_plain(metadata=mutation("delete", "record", destructive=True))
    def purge_everything(confirm: bool) -> str:
        """Purge every record of the instance (admin maintenance)."""
        return "purged"

    return toolset


def _docs(config, ctx) -> FunctionToolset:
    toolset = FunctionToolset()

    @toolset.tool_plain
    def search_docs(query: str) -> str:
        """Search the Skilldesk documentation."""
        if query == "fail":
            raise ModelRetry("try again")
        return "Compaction summarises old turns [docs/compaction.md]."

    return toolset


SKILLS = [
    Skill(name="rows", title="Rows", config=NoConfig, build=_rows, tool_groups=(ToolGroup("data", "Data"),)),
    Skill(name="triggers", title="Triggers", config=NoConfig, build=_triggers,
          tool_groups=(ToolGroup("automation", "Automation"),)),
    Skill(name="secrets", title="Secrets", config=NoConfig, build=_secrets,
          tool_groups=(ToolGroup("maintenance", "Maintenance", can_use=lambda ctx: ctx.role == "admin"),)),
    Skill(name="docs", title="Docs", config=NoConfig, build=_docs, tool_groups=(ToolGroup("docs", "Docs"),)),
]

MODES = {"modes": [{"name": "data", "groups": ["data"], "description": "tables and rows"},
                   {"name": "automation", "groups": ["automation"], "description": "triggers"},
                   {"name": "maintenance", "groups": ["maintenance"], "description": "instance upkeep"}]}


@contextmanager
def installed(app) -> Iterator[None]:
    """Register the test skills in the app's registry for the test's duration."""
    registry = app.extensions["skills"]
    for skill in SKILLS:
        registry[skill.name] = skill
    try:
        yield
    finally:
        for skill in SKILLS:
            registry.pop(skill.name, None)


def skill_entries(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """The test skills as an agent's skill entries, plus the given ones."""
    return [{"name": skill.name, "config": {}} for skill in SKILLS] + list(extra)
