"""Who is acting: the user a run acts for, read again at each call, and the refusals.

`Refused` and `Invalid` are the runtime's errors for services offered to skills (app/runtime/services.py),
so the Workspace tools skill can tell them apart without importing this area.
"""

from __future__ import annotations

from app.extensions import db
from app.models import DataTable, User
from app.runtime.contract import Invalid, Refused
from app.tables.permissions import allowed
from app.tables.schema import get_table

VERBS = {"read": "read", "insert": "add rows to", "update": "change rows of", "delete": "delete rows of"}


def acting_user(user_id: int | None) -> User | None:
    """Return the active user the run acts for, read now (a demotion applies to the next call)."""
    user = db.session.get(User, user_id) if user_id else None
    return user if user is not None and user.active else None


def role_of(user_id: int | None) -> str | None:
    """Return the acting user's current role, or None for no active user."""
    user = acting_user(user_id)
    return user.role if user is not None else None


def require_admin(user_id: int | None, what: str) -> User:
    """Return the acting admin, or refuse as the admin pages do."""
    user = acting_user(user_id)
    if user is None or user.role != "admin":
        who = f"{user.name} (role {user.role})" if user is not None else "This run's user"
        raise Refused(f"Refused: {who} may not {what}; only an admin can. Nothing was changed.")
    return user


def table_for(user_id: int | None, name: str, action: str) -> DataTable:
    """Return the table when the acting user may do the action on its rows, else refuse."""
    user = acting_user(user_id)
    role = user.role if user is not None else None
    definition = get_table(name)
    if definition is None or not allowed(definition, role, "read"):
        raise Invalid(f"There is no table {name!r} you can read; call list_tables for the names.")
    if not allowed(definition, role, action):
        who = f"{user.name} (role {role})" if user is not None else "This run's user"
        raise Refused(f"Refused: {who} may not {VERBS[action]} the table {definition.label} ({name}). "
                      f"Only an admin can grant the {action} permission; nothing was changed.")
    return definition
