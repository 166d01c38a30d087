"""The SQL side of a data table: its SQLAlchemy Core `Table`, and schema changes through Alembic operations.

Every change runs on the session's connection, so the definition rows and the DDL commit or roll
back together (PostgreSQL and SQLite both have transactional DDL). SQLite cannot drop or rename a
column in every version, so those go through Alembic's batch mode, which copies the table when needed.
"""

from __future__ import annotations

from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import Column, Integer, MetaData, Table

from app.extensions import db
from app.models import DataField, DataTable, Trigger
from app.models.base import UTCDateTime
from app.tables.fields import KINDS, check_name, column_type


class SchemaError(ValueError):
    """A schema change that cannot be made; the message says why, for the field named in `field`."""

    def __init__(self, message: str, field: str = "name") -> None:
        super().__init__(message)
        self.field = field


def sql_table(definition: DataTable) -> Table:
    """Return the Core table of a definition: id, created_at, updated_at, then one column per field."""
    columns = _system_columns()
    # Every field column is nullable: "required" is enforced on write, so adding one to a full table works.
    columns += [Column(f.name, column_type(f.kind), nullable=True) for f in definition.fields]
    return Table(definition.sql_name, MetaData(), *columns)


def _system_columns() -> list[Column]:
    return [
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
    ]


def get_table(name: str) -> DataTable | None:
    """Return the definition of the named table, if any."""
    return db.session.scalar(db.select(DataTable).where(DataTable.name == name))


def _operations() -> Operations:
    return Operations(MigrationContext.configure(connection=db.session.connection()))


def create_table(name: str, label: str, description: str = "") -> DataTable:
    """Define a table and create its SQL table; the caller commits."""
    error = check_name(name, "table")
    if error:
        raise SchemaError(error)
    if get_table(name) is not None:
        raise SchemaError(f"A table named {name!r} already exists.")
    definition = DataTable(name=name, label=label.strip() or name, description=description.strip())
    db.session.add(definition)
    db.session.flush()
    _operations().create_table(definition.sql_name, *_system_columns())
    return definition


def add_field(definition: DataTable, name: str, label: str, kind: str, required: bool = False,
              choices: list[str] | None = None, link_table: DataTable | None = None) -> DataField:
    """Add a typed field and its column; the caller commits."""
    error = check_name(name)
    if error:
        raise SchemaError(error)
    if definition.field(name) is not None:
        raise SchemaError(f"The table already has a field named {name!r}.")
    if kind not in KINDS:
        raise SchemaError(f"Choose one of the kinds: {', '.join(KINDS)}.", "kind")
    choices = [c.strip() for c in choices or [] if c.strip()]
    if kind == "choice" and not choices:
        raise SchemaError("List the choices, one per line.", "choices")
    if kind == "link" and link_table is None:
        raise SchemaError("Choose the table this field links to.", "link_table")
    position = max((f.position for f in definition.fields), default=0) + 1
    field = DataField(name=name, label=label.strip() or name, kind=kind, required=required,
                      choices=choices if kind == "choice" else [], position=position,
                      link_table_id=link_table.id if kind == "link" and link_table else None)
    definition.fields.append(field)
    db.session.flush()
    _operations().add_column(definition.sql_name, Column(name, column_type(kind), nullable=True))
    return field


def change_field(definition: DataTable, field: DataField, name: str, label: str, required: bool,
                 choices: list[str] | None = None) -> None:
    """Rename a field (its column too), relabel it, or change whether it is required; the caller commits."""
    if name != field.name:
        error = check_name(name)
        if error:
            raise SchemaError(error)
        if definition.field(name) is not None:
            raise SchemaError(f"The table already has a field named {name!r}.")
        with _operations().batch_alter_table(definition.sql_name) as batch:
            batch.alter_column(field.name, new_column_name=name)
        _retarget_write_backs(definition, field.name, name)
        field.name = name
    if field.kind == "choice" and choices is not None:
        choices = [c.strip() for c in choices if c.strip()]
        if not choices:
            raise SchemaError("List the choices, one per line.", "choices")
        field.choices = choices
    field.label = label.strip() or field.name
    field.required = required


def remove_field(definition: DataTable, field: DataField) -> None:
    """Remove a field and drop its column with the values in it; the caller commits."""
    with _operations().batch_alter_table(definition.sql_name) as batch:
        batch.drop_column(field.name)
    _retarget_write_backs(definition, field.name, None)
    definition.fields.remove(field)


def drop_table(definition: DataTable) -> None:
    """Drop the table with all its rows, and its definition and triggers; the caller commits."""
    _operations().drop_table(definition.sql_name)
    db.session.execute(db.delete(Trigger).where(Trigger.table_id == definition.id))
    db.session.delete(definition)


def _retarget_write_backs(definition: DataTable, old: str, new: str | None) -> None:
    db.session.execute(db.update(Trigger).where(Trigger.table_id == definition.id,
                                                Trigger.write_back_field == old)
                       .values(write_back_field=new))
