"""Adaptive assistance: preferences, page context, proposable targets, capabilities and the gate."""

from __future__ import annotations

import json
from typing import Any

from flask import Flask
from flask_login import current_user

from app.assistance.preferences import UI_DEFAULTS, ui_setting
from app.models import DataTable


def init_app(app: Flask) -> None:
    """Give templates the signed-in user's own settings and the page context of the data pages."""

    @app.template_global("ui_setting")
    def current_ui_setting(key: str) -> Any:
        if not current_user.is_authenticated:
            return UI_DEFAULTS[key]
        return ui_setting(current_user, key)

    @app.template_global("assistant_page_context")
    def assistant_page_context(table: DataTable, record_key: int | None = None, layout: str | None = None) -> str:
        return json.dumps(page_context_of(table, record_key, layout))


def page_context_of(table: DataTable, record_key: int | None, layout: str | None) -> dict[str, Any]:
    """Return the context a data page's assistant panel sends with each message."""
    page: dict[str, Any] = {"resource": f"data/{table.name}", "recordKey": record_key, "locale": "en"}
    if layout:
        page["list"] = {"viewMode": layout}
    return {"page": page}
