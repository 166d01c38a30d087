"""Rows of data tables: validate, read, list (search, filters, sorting, pages), insert, update, delete.

Writes commit and then emit a table event, so a trigger never holds up or undoes the change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask_sqlalchemy.pagination import SelectPagination
from sqlalchemy import Select, Table, and_, false, func, literal_column, or_, select

from app.extensions import db
from app.models import DataField, DataTable
from app.models.base import ID_MAX, utcnow
from app.tables import events
from app.tables.fields import NUMBER_KINDS, SYSTEM_COLUMNS, TEXT_KINDS, jsonable, parse, parse_kind
from app.tables.schema import sql_table

OPERATORS: dict[str, str] = {
    "eq": "is", "ne": "is not", "contains": "contains", "lt": "is less than", "le": "is at most",
    "gt": "is more than", "ge": "is at least", "empty": "is empty", "set": "is not empty",
}
ORDERED_OPERATORS = ("lt", "le", "gt", "ge")
COUNT_LIMIT = 10_000


class UnknownField(LookupError):
    """A query named a field the table does not have."""

    def __init__(self, definition: DataTable, name: str) -> None:
        self.name = name
        self.fields = [*SYSTEM_COLUMNS[:1], *(f.name for f in definition.fields), *SYSTEM_COLUMNS[1:]]
        super().__init__(f"The table {definition.name!r} has no field {name!r}; "
                         f"its fields are: {', '.join(self.fields)}.")


class BadFilter(ValueError):
    """A filter whose operator or value does not fit its field."""


@dataclass(frozen=True)
class Filter:
    field: str
    op: str
    value: str | None = None

    def describe(self, definition: DataTable) -> str:
        """Say the filter in words ("Status is open")."""
        field = definition.field(self.field)
        label = field.label if field else self.field
        return f"{label} {OPERATORS.get(self.op, self.op)}" + ("" if self.op in ("empty", "set")
                                                              else f" {self.value}")


class RowPagination(SelectPagination):
    """Flask-SQLAlchemy's pagination over a Core select: items are row mappings, not ORM objects.

    The total is counted up to COUNT_LIMIT rows only, so that a page of a huge table costs about
    what a page of a small one does; past that the page says "more than" and Next still works.
    """

    more = False
    capped = False

    def _query_items(self) -> list[Any]:
        query = self._query_args["select"].limit(self.per_page + 1).offset(self._query_offset)
        rows = [dict(row) for row in self._query_args["session"].execute(query).mappings()]
        self.more = len(rows) > self.per_page
        return rows[: self.per_page]

    def _query_count(self) -> int:
        ones = self._query_args["select"].with_only_columns(literal_column("1"), maintain_column_froms=True)
        limited = ones.order_by(None).limit(COUNT_LIMIT + 1).subquery()
        total = self._query_args["session"].execute(select(func.count()).select_from(limited)).scalar()
        self.capped = total > COUNT_LIMIT
        return min(total, COUNT_LIMIT)

    @property
    def pages(self) -> int:
        if not self.capped:
            return super().pages
        return max(super().pages, self.page + (1 if self.more else 0))

    @property
    def total_text(self) -> str:
        """Say how many rows match: exactly, or "more than 10,000"."""
        return f"more than {self.total:,}" if self.capped else f"{self.total:,}"

    @property
    def has_next(self) -> bool:
        return self.more


def column_of(definition: DataTable, table: Table, name: str):
    """Return the column of a field or system column; raise UnknownField naming the real ones."""
    if name not in SYSTEM_COLUMNS and definition.field(name) is None:
        raise UnknownField(definition, name)
    return table.c[name]


def kind_of(definition: DataTable, name: str) -> str:
    """Return the kind of a field or system column."""
    if name == "id":
        return "integer"
    if name in SYSTEM_COLUMNS:
        return "datetime"
    field = definition.field(name)
    if field is None:
        raise UnknownField(definition, name)
    return field.kind


def filter_clause(definition: DataTable, table: Table, item: Filter):
    """Return the WHERE clause of one filter; raise UnknownField or BadFilter."""
    column = column_of(definition, table, item.field)
    kind = kind_of(definition, item.field)
    if item.op == "empty":
        return or_(column.is_(None), column == "") if kind in TEXT_KINDS else column.is_(None)
    if item.op == "set":
        return and_(column.is_not(None), column != "") if kind in TEXT_KINDS else column.is_not(None)
    if item.op == "contains":
        if kind not in TEXT_KINDS:
            raise BadFilter(f"“contains” works on text fields; use “is” for {item.field}.")
        return column.icontains(str(item.value or ""), autoescape=True)
    if item.op not in OPERATORS:
        raise BadFilter(f"Unknown operator {item.op!r}; use one of {', '.join(OPERATORS)}.")
    if kind == "boolean" and item.op in ORDERED_OPERATORS:
        raise BadFilter(f"{item.field} is yes or no; use “is” or “is not”.")
    try:
        value = parse_kind("integer" if kind == "link" else kind, item.value, _any_choice(definition, item))
    except ValueError as error:
        raise BadFilter(f"{item.field}: {error}.") from None
    if value is None:
        return column.is_(None) if item.op == "eq" else column.is_not(None)
    return {"eq": column == value, "ne": or_(column != value, column.is_(None)), "lt": column < value,
            "le": column <= value, "gt": column > value, "ge": column >= value}[item.op]


def _any_choice(definition: DataTable, item: Filter) -> tuple[str, ...]:
    # Filtering on a value that is not (or no longer) a choice simply finds nothing.
    return (str(item.value),)


def search_clause(definition: DataTable, table: Table, text: str):
    """Return the WHERE clause matching text in any field: contained in text, equal for numbers."""
    text = text.strip()
    clauses = [table.c[f.name].icontains(text, autoescape=True)
               for f in definition.fields if f.kind in TEXT_KINDS]
    for field in definition.fields:
        if field.kind in NUMBER_KINDS or field.kind in ("date", "boolean"):
            try:
                value = parse_kind("integer" if field.kind == "link" else field.kind, text)
            except ValueError:
                continue
            if field.kind != "boolean" or text.lower() in ("true", "false", "yes", "no"):
                clauses.append(table.c[field.name] == value)
    if text.isdigit() and int(text) <= ID_MAX:  # a bigger number is no row's id (and overflows the column)
        clauses.append(table.c.id == int(text))
    return or_(*clauses) if clauses else false()


def select_rows(definition: DataTable, search: str = "", filters: list[Filter] = (),
                sort: str = "id") -> Select:
    """Select the rows that match, in order; raise UnknownField or BadFilter for a bad query."""
    table = sql_table(definition)
    query = select(table)
    if search.strip():
        query = query.where(search_clause(definition, table, search))
    for item in filters:
        query = query.where(filter_clause(definition, table, item))
    descending = sort.startswith("-")
    column = column_of(definition, table, sort.lstrip("-") or "id")
    # id breaks ties so that pages never overlap or skip rows.
    if column.name == "id":
        return query.order_by(column.desc() if descending else column.asc())
    return query.order_by(column.desc() if descending else column.asc(),
                          table.c.id.desc() if descending else table.c.id.asc())


def page_of_rows(definition: DataTable, query: Select, page: int, per_page: int) -> RowPagination:
    """Return one page of a select of rows, with the total."""
    return RowPagination(select=query, session=db.session, page=page, per_page=per_page, max_per_page=100,
                         error_out=False)


def get_row(definition: DataTable, row_id: int) -> dict[str, Any] | None:
    """Return a row as a dict, or None."""
    table = sql_table(definition)
    row = db.session.execute(select(table).where(table.c.id == row_id)).mappings().first()
    return dict(row) if row is not None else None


def form_data(definition: DataTable, form: Mapping[str, Any]) -> dict[str, Any]:
    """Read a record form: text as sent, and an unticked checkbox as no."""
    return {f.name: ("yes" if form.get(f.name) else "no") if f.kind == "boolean" else form.get(f.name)
            for f in definition.fields}


def validate(definition: DataTable, data: Mapping[str, Any], partial: bool = False
             ) -> tuple[dict[str, Any], dict[str, str]]:
    """Read values for the table's fields; returns (values, errors by field name).

    With `partial`, only the fields present in `data` are read (an update of some fields).
    """
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in data:
        if definition.field(name) is None:
            errors[name] = f"There is no field {name!r}."
    for field in definition.fields:
        if partial and field.name not in data:
            continue
        try:
            value = parse(field, data.get(field.name))
        except ValueError as error:
            errors[field.name] = _sentence(field, error)
            continue
        if value is None and field.required:
            errors[field.name] = f"{field.label} is required."
        elif value is not None and field.kind == "link" and not _link_exists(field, value):
            errors[field.name] = f"There is no row {value} in the linked table."
        else:
            values[field.name] = value
    return values, errors


def _link_exists(field: DataField, row_id: int) -> bool:
    if field.link_table is None:
        return True
    table = sql_table(field.link_table)
    return db.session.scalar(select(table.c.id).where(table.c.id == row_id)) is not None


def _sentence(field: DataField, error: ValueError) -> str:
    text = str(error) or "is not valid"
    text = f"{field.label} {text}" if text.startswith("is ") else text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def insert_row(definition: DataTable, values: dict[str, Any], user_id: int | None = None,
               run_id: str | None = None) -> int:
    """Insert validated values, commit, and emit the insert event; returns the new id."""
    table = sql_table(definition)
    now = utcnow()
    result = db.session.execute(table.insert().values({**values, "created_at": now, "updated_at": now}))
    row_id = int(result.inserted_primary_key[0])
    name = definition.name
    db.session.commit()
    row = get_row(definition, row_id) or {}
    events.emit(events.TableEvent(name, "insert", row_id, json_row(row), None, user_id, run_id))
    return row_id


def update_row(definition: DataTable, row_id: int, values: dict[str, Any], user_id: int | None = None,
               run_id: str | None = None, emit: bool = True) -> dict[str, Any] | None:
    """Update validated values of a row, commit, and emit the update event; None when there is no row."""
    table = sql_table(definition)
    previous = get_row(definition, row_id)
    if previous is None:
        return None
    db.session.execute(table.update().where(table.c.id == row_id).values({**values, "updated_at": utcnow()}))
    name = definition.name
    db.session.commit()
    row = get_row(definition, row_id) or {}
    if emit:
        events.emit(events.TableEvent(name, "update", row_id, json_row(row), json_row(previous), user_id,
                                      run_id))
    return row


def delete_row(definition: DataTable, row_id: int, user_id: int | None = None,
               run_id: str | None = None) -> bool:
    """Delete a row, commit, and emit the delete event; False when there was no row."""
    table = sql_table(definition)
    previous = get_row(definition, row_id)
    if previous is None:
        return False
    db.session.execute(table.delete().where(table.c.id == row_id))
    name = definition.name
    db.session.commit()
    gone = json_row(previous)
    events.emit(events.TableEvent(name, "delete", row_id, gone, gone, user_id, run_id))
    return True


def json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Return a row with JSON-ready values."""
    return {key: jsonable(value) for key, value in row.items()}


def link_titles(field: DataField, ids: set[int]) -> dict[int, str]:
    """Return a short title for each linked row id: its first text field, else '#id'."""
    linked = field.link_table
    if linked is None or not ids:
        return {}
    title_field = next((f for f in linked.fields if f.kind in ("text", "choice")), None)
    table = sql_table(linked)
    columns = [table.c.id] + ([table.c[title_field.name]] if title_field else [])
    rows = db.session.execute(select(*columns).where(table.c.id.in_(sorted(ids)[:500])))
    return {row[0]: (str(row[1]) if title_field and row[1] is not None else f"#{row[0]}") for row in rows}
