"""preferences as namespaces

Revision ID: 7c4a9e2b1d35
Revises: d2fcb98238db
Create Date: 2026-12-01 21:40:00

users.preferences becomes `{namespace: {key: value}}` with Skilldesk's own settings in `ui`
(app/assistance/preferences.py). Stored values are carried over: the list layout already lived at
`ui.defaultListLayout`; a missing or malformed column becomes `{}`, entries that are not namespaces
of keys are dropped, and a `ui` setting Skilldesk does not know or whose value is not allowed is
dropped, so that every stored value passes the checks a PATCH makes. Theme choices kept in the
browser's localStorage move on the next page load (app.js sends them to the API).
"""
import json

from alembic import op
import sqlalchemy as sa


revision = '7c4a9e2b1d35'
down_revision = 'd2fcb98238db'
branch_labels = None
depends_on = None

UI = {"defaultListLayout": ("table", "cards"), "theme": ("auto", "light", "dark"), "sidebarCollapsed": (True, False)}


def normalized(stored):
    if not isinstance(stored, dict):
        return {}
    result = {name: dict(keys) for name, keys in stored.items() if isinstance(keys, dict) and keys}
    if "ui" in result:
        ui = {key: value for key, value in result["ui"].items()
              if key in UI and any(value == allowed and type(value) is type(allowed) for allowed in UI[key])}
        if ui:
            result["ui"] = ui
        else:
            del result["ui"]
    return result


def upgrade():
    users = sa.table("users", sa.column("id", sa.Integer), sa.column("preferences", sa.JSON))
    connection = op.get_bind()
    for user_id, stored in connection.execute(sa.select(users.c.id, users.c.preferences)).all():
        if isinstance(stored, str):  # a JSON column read back as text by some drivers
            stored = json.loads(stored)
        value = normalized(stored)
        if value != stored:
            connection.execute(users.update().where(users.c.id == user_id).values(preferences=value))


def downgrade():
    pass  # the shape is a subset of what the column held before
