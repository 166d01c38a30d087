"""Build data tables in tests through the same schema functions the admin pages use."""

from __future__ import annotations

from app.extensions import db
from app.models import DataTable
from app.tables.schema import add_field, create_table

ORDER_FIELDS = [
    ("customer", "Customer", "text", True, None),
    ("amount", "Amount", "decimal", False, None),
    ("status", "Status", "choice", False, ["open", "closed"]),
    ("due", "Due", "date", False, None),
    ("paid", "Paid", "boolean", False, None),
    ("qty", "Quantity", "integer", False, None),
    ("notes", "Notes", "long_text", False, None),
]


def make_table(
    name: str = "orders", fields=ORDER_FIELDS, permissions: dict | None = None, label: str | None = None
) -> DataTable:
    """Create and commit a table with fields (inside an app context)."""
    definition = create_table(name, label or name.title())
    for field_name, field_label, kind, required, choices in fields:
        add_field(definition, field_name, field_label, kind, required, choices)
    if permissions is not None:
        definition.permissions = permissions
    db.session.commit()
    return definition
