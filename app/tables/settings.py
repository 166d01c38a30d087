"""A table's settings (label, description, assistant, permissions): checked, then applied, for the page and tools."""

from __future__ import annotations

from typing import Any

from app.models import DataTable
from app.models.tables import TABLE_ACTIONS
from app.tables.permissions import GRANTABLE

LABEL_CHARS, DESCRIPTION_CHARS = 80, 300


def check_permissions(value: Any) -> str | None:
    """Return why a permissions value is not valid ({action: [roles]}), or None."""
    if not isinstance(value, dict):
        return "permissions must map each action (read, insert, update, delete) to a list of roles"
    for action, roles in value.items():
        if action not in TABLE_ACTIONS:
            return f"{action!r} is not an action; use {', '.join(TABLE_ACTIONS)}"
        if not isinstance(roles, list) or any(role not in GRANTABLE[action] for role in roles):
            return f"{action} can be granted to {', '.join(GRANTABLE[action])} only"
    return None


def apply_settings(definition: DataTable, label: str | None = None, description: str | None = None,
                   permissions: dict[str, list[str]] | None = None, assistant_agent_id: int | None | bool = False
                   ) -> dict[str, str]:
    """Apply the valid settings given (None = keep); return the ones kept unchanged with why. The caller commits."""
    kept: dict[str, str] = {}
    if label is not None:
        if not label.strip() or len(label.strip()) > LABEL_CHARS:
            kept["label"] = f"a label needs 1 to {LABEL_CHARS} characters"
        else:
            definition.label = label.strip()
    if description is not None:
        if len(description.strip()) > DESCRIPTION_CHARS:
            kept["description"] = f"a description has at most {DESCRIPTION_CHARS} characters"
        else:
            definition.description = description.strip()
    if permissions is not None:
        problem = check_permissions(permissions)
        if problem:
            kept["permissions"] = problem
        else:
            definition.permissions = {action: list(dict.fromkeys(permissions.get(action, [])))
                                      for action in TABLE_ACTIONS}
    if assistant_agent_id is not False:
        definition.assistant_agent_id = assistant_agent_id or None
    return kept
