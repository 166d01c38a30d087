"""What the Workspace assistant's tools do, over the same domain functions the admin and data pages use.

Each function takes the acting user's id, reads the user's role again, and refuses (`Refused`) what the
pages would refuse that role; `Invalid` is a mistake the model can fix. Creation reconciles exact-name
matches (`reuse.py`); nothing here overwrites an existing resource without `confirm`.

This area stands above the skills (it drives the agent editor's and the trigger form's rules), so the
Workspace tools skill does not import it: `init_app` registers `WorkspaceServices` as the skill's
"workspace" service (app/runtime/services.py), which satisfies the skill's `Workspace` Protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask

from app.runtime.contract import register_service
from app.workspace import automation, rows, tables
from app.workspace.row_tools import Guard, RowTools
from app.workspace.rows import CreationTotals


class WorkspaceServices:
    """The Workspace tools skill's services (the `Workspace` Protocol of app/skills/workspace.py)."""

    list_tables = staticmethod(tables.list_tables)
    describe_table = staticmethod(tables.describe_table)
    table_summary = staticmethod(tables.table_summary)
    create_table = staticmethod(tables.create_table_with_fields)
    update_table = staticmethod(tables.update_table)
    list_rows = staticmethod(rows.list_rows)
    list_agents = staticmethod(automation.list_agents)
    create_agent = staticmethod(automation.create_agent)
    update_agent = staticmethod(automation.update_agent)
    list_triggers = staticmethod(automation.list_triggers)
    create_trigger = staticmethod(automation.create_trigger)
    update_trigger = staticmethod(automation.update_trigger)

    @staticmethod
    def row_tools(user_id: int | None, run_id: str | None, max_created_rows: int, guard: Guard,
                  in_app: Callable[[], Any]) -> RowTools:
        """Return a run's per-table row tools, creating at most `max_created_rows` rows per table."""
        return RowTools(user_id, run_id, CreationTotals(max_created_rows), guard, in_app)


def init_app(app: Flask) -> None:
    """Offer the workspace services to the Workspace tools skill in this app."""
    register_service(app, "workspace", WorkspaceServices())
