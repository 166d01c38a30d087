"""Navigation entries that areas add to the top bar (data tables, memories, runs, ...)."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, request, url_for
from flask_login import current_user


@dataclass(frozen=True)
class NavItem:
    label: str
    endpoint: str
    roles: tuple[str, ...] = ("admin", "user", "guest")
    # An endpoint answering a fragment shown beside the label (a count), refreshed live by htmx.
    badge: str | None = None


def add(app: Flask, label: str, endpoint: str, roles: tuple[str, ...] = ("admin", "user", "guest"),
        badge: str | None = None) -> None:
    """Add an entry to the app's top bar for the given roles (kept in `app.extensions["navigation"]`)."""
    items = app.extensions.setdefault("navigation", [])
    if all(item.endpoint != endpoint for item in items):
        items.append(NavItem(label, endpoint, roles, badge))


def init_app(app: Flask) -> None:
    app.extensions.setdefault("navigation", [])

    @app.context_processor
    def navigation():
        def extra_nav():
            if not current_user.is_authenticated:
                return []
            return [
                {"label": item.label, "url": url_for(item.endpoint),
                 "current": request.endpoint == item.endpoint,
                 "badge": url_for(item.badge) if item.badge else None}
                for item in app.extensions["navigation"]
                if current_user.role in item.roles and item.endpoint in app.view_functions
            ]

        return {"extra_nav": extra_nav}
