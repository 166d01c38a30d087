"""Who may read, insert, update and delete the rows of a table: admins always; others by their role."""

from __future__ import annotations

from app.extensions import db
from app.models import DataTable
from app.models.tables import TABLE_ACTIONS

# Guests are read-only wherever they are allowed at all.
GRANTABLE = {"read": ("user", "guest"), "insert": ("user",), "update": ("user",), "delete": ("user",)}


def allowed(definition: DataTable, role: str | None, action: str) -> bool:
    """Tell whether a role may do the action on the table's rows."""
    if action not in TABLE_ACTIONS or role is None:
        return False
    if role == "admin":
        return True
    return role in GRANTABLE[action] and role in (definition.permissions or {}).get(action, [])


def readable_tables(role: str | None) -> list[DataTable]:
    """Return the tables a role may read, by label."""
    tables = db.session.scalars(db.select(DataTable).order_by(DataTable.label, DataTable.name))
    return [t for t in tables if allowed(t, role, "read")]


def permissions_from_form(form) -> dict[str, list[str]]:
    """Read the permission checkboxes (`perm-<action>` with role values) of the admin form."""
    return {action: [role for role in form.getlist(f"perm-{action}") if role in GRANTABLE[action]]
            for action in TABLE_ACTIONS}
