"""The skills registry: a dict filled from the built-ins and the `skilldesk.skills` entry points."""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import entry_points

from flask import Flask, current_app

from app.runtime.contract import Skill

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "skilldesk.skills"

# Built-in skills are modules exposing `skill`, loaded exactly like third-party ones.
BUILTINS: tuple[str, ...] = (
    "app.skills.clock",
    "app.skills.subagent",
    "app.skills.mcp",
    "app.skills.model_picker",
    "app.skills.actions",
    "app.skills.plan_approval",
    "app.skills.ask_user",
    "app.skills.tool_approval",
    "app.skills.memory",
    "app.skills.web_search",
    "app.skills.http_request",
    "app.skills.javascript",
    "app.skills.generated_code",
    "app.skills.table",
    "app.skills.preload_data",
    "app.skills.compaction",
    "app.skills.ui_proposals",
    "app.skills.workspace",
    "app.skills.tool_routing",
    "app.skills.action_memory",
    "app.skills.answer_checks",
    "app.skills.knowledge",
)


def load_registry() -> dict[str, Skill]:
    """Collect the built-in skills and those of installed packages."""
    found: dict[str, Skill] = {}
    for module_name in BUILTINS:
        _add(found, importlib.import_module(module_name).skill, module_name)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            _add(found, entry.load(), entry.value)
        except Exception:  # a broken plugin must not take the app down
            log.exception("could not load skill plugin %s", entry.value)
    return found


def _add(found: dict[str, Skill], skill: Skill, origin: str) -> None:
    if not isinstance(skill, Skill):
        raise TypeError(f"{origin} does not expose a Skill")
    if skill.name in found:
        raise ValueError(f"two skills are named {skill.name!r} ({origin})")
    found[skill.name] = skill


def init_app(app: Flask) -> None:
    app.extensions["skills"] = load_registry()


def registry() -> dict[str, Skill]:
    """Return the current app's skills by name."""
    return current_app.extensions["skills"]
