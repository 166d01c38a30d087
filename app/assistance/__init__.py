"""Adaptive assistance: preferences, page context, proposable targets, capabilities and the gate."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_login import current_user

from app.assistance.preferences import UI_DEFAULTS, ui_setting


def init_app(app: Flask) -> None:
    """Give templates the signed-in user's own settings (`ui_setting('theme')`)."""

    @app.template_global("ui_setting")
    def current_ui_setting(key: str) -> Any:
        if not current_user.is_authenticated:
            return UI_DEFAULTS[key]
        return ui_setting(current_user, key)
