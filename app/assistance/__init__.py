"""Adaptive assistance: preferences, page context, proposable targets, capabilities and the gate."""

from __future__ import annotations

import json
from typing import Any

from flask import Flask
from flask_login import current_user
from jinja2 import pass_context

from app.assistance import gate
from app.assistance.capabilities import agent_offers_proposals
from app.assistance.panel import workspace_agent
from app.assistance.preferences import UI_DEFAULTS, UI_SETTINGS, ui_setting
from app.models import Agent, DataTable


def init_app(app: Flask) -> None:
    """Put the assistant switch in front of the assistant routes; give templates the user's settings."""
    gate.init_app(app)

    @app.template_global("ui_setting")
    def current_ui_setting(key: str) -> Any:
        if not current_user.is_authenticated:
            return UI_DEFAULTS[key]
        return ui_setting(current_user, key)

    @app.template_global("workspace_panel")
    @pass_context
    def workspace_panel(context) -> dict[str, Any] | None:
        """Return the Workspace assistant's panel for this page (its agent and the page context), or None."""
        if not current_user.is_authenticated or context.get("hide_workspace_panel"):
            return None
        agent = workspace_agent(current_user)
        if agent is None:
            return None
        table, row = context.get("table"), context.get("row")
        if isinstance(table, DataTable):
            page = page_context_of(table, agent, row.get("id") if isinstance(row, dict) else None,
                                   context.get("layout") if isinstance(context.get("layout"), str) else None)
        else:
            page = {"page": {"resource": None, "locale": "en"}}
        return {"agent": agent, "context": json.dumps(page)}

    @app.template_global("assistant_page_context")
    def assistant_page_context(table: DataTable, agent: Agent | None, record_key: int | None = None,
                               layout: str | None = None) -> str:
        return json.dumps(page_context_of(table, agent, record_key, layout))


def page_context_of(table: DataTable, agent: Agent | None, record_key: int | None,
                    layout: str | None) -> dict[str, Any]:
    """Return the context a data page's assistant panel sends with each message.

    A list page declares its layout as proposable (the user's default, and this list's view) only
    when the panel's agent has the proposal tools, as any client reading the capabilities would.
    Each target's `current` is the value in force: the stored preference, and the layout this list
    shows (which `?layout=` may set for the page alone); the proposal tools refuse to propose it.
    """
    page: dict[str, Any] = {"resource": f"data/{table.name}", "recordKey": record_key, "locale": "en"}
    if layout:
        page["list"] = {"viewMode": layout}
        if agent_offers_proposals(agent):
            schema = UI_SETTINGS["defaultListLayout"].schema
            page["proposable"] = [
                {"kind": "preference", "target": {"namespace": "ui", "key": "defaultListLayout"},
                 "schema": schema, "current": ui_setting(current_user, "defaultListLayout"),
                 "description": "Default layout of lists"},
                {"kind": "view_state", "target": {"resource": f"data/{table.name}", "view": "layout"},
                 "schema": schema, "current": layout, "description": f"Layout of the list of {table.label}"[:120]},
            ]
    return {"page": page}
