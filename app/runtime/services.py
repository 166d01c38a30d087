"""Services an area offers skills by name: how a skill uses an area that stands above it.

Skills sit below the areas (the agent editor and the chat import the skill registry), so a skill that
works on the app itself (the Workspace tools create tables, agents and triggers) cannot import the area
that does it. Instead the area registers an implementation in its `init_app`
(`register_service(app, "workspace", services)`, kept in `app.extensions["skill_services"]`) and the
skill asks for it (`ctx.service("workspace")`), typed by a Protocol the skill declares for what it needs.
The services raise `Refused` (the acting user may not: a failed step) or `Invalid` (a mistake the model
can correct), which the skill turns into its tool's outcome.
"""

from __future__ import annotations

from typing import Any

from flask import Flask

KEY = "skill_services"


class Refused(PermissionError):
    """The acting user may not do this; the message says why and that nothing changed."""


class Invalid(ValueError):
    """A request the model can correct; the message says how."""


def register_service(app: Flask, name: str, service: Any) -> None:
    """Offer `service` to skills as `name` in this app."""
    app.extensions.setdefault(KEY, {})[name] = service


def service_of(app: Flask, name: str) -> Any:
    """Return the service registered as `name`; raise LookupError naming the missing registration."""
    try:
        return app.extensions.get(KEY, {})[name]
    except KeyError:
        raise LookupError(f"No service {name!r} is registered in this app: the area that offers it registers it "
                          f"in its init_app (register_service), called from create_app.") from None
