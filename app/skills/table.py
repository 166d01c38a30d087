"""Data tables: the agent queries the configured tables and, when enabled, inserts and updates rows.

Every call checks the permissions of the user the agent acts for, inside the tool: a refusal is a
failed tool result (`ToolFailed`) that says why. A query on a field that does not exist asks the
model to retry and names the real fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import ModelRetry, ToolReturn
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.extensions import db
from app.models import DataTable, User
from app.runtime.contract import TRUSTED_RESULT_KEY, Skill, SkillContext, mutation
from app.tables.markdown import describe_fields, markdown_table
from app.tables.permissions import allowed
from app.tables.records import (
    BadFilter,
    Filter,
    UnknownField,
    get_row,
    insert_row,
    page_of_rows,
    select_rows,
    update_row,
    validate,
)
from app.tables.schema import get_table

TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
OPERATORS = {"=": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "contains": "contains",
             "empty": "empty", "not empty": "set"}
VERBS = {"read": "read", "insert": "insert rows into", "update": "change rows of"}


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    tables: list[str] = Field(default_factory=list, max_length=20)
    """The tables the agent may use, by name (one per line)."""

    allow_insert: bool = False
    """Give the agent a tool to add rows; it works only for people allowed to insert into the table."""

    allow_update: bool = False
    """Give the agent a tool to change rows; it works only for people allowed to update the table."""

    max_rows: int = Field(20, ge=1, le=200)
    """The most rows one query returns."""

    @field_validator("tables")
    @classmethod
    def table_names(cls, names: list[str]) -> list[str]:
        names = [name.strip() for name in names if name.strip()]
        bad = [name for name in names if not TABLE_NAME.match(name)]
        if bad:
            raise ValueError(f"Not a table name: {', '.join(bad)}; use the names shown under Tables.")
        return list(dict.fromkeys(names))


class Condition(BaseModel):
    """One condition on a field."""

    field: str
    op: Literal["=", "!=", "<", "<=", ">", ">=", "contains", "empty", "not empty"] = "="
    value: str | int | float | bool | None = None




def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    toolset = FunctionToolset()
    with ctx.app_context():
        definitions = [d for d in (get_table(name) for name in config.tables) if d is not None]
        described = [(d.name, d.label, describe_fields(d)) for d in definitions]
    for name, label, fields in described:
        toolset.add_function(_query_tool(name, config, ctx), name=f"query_{name}",
                             description=f"Query (search, find, list) rows of the table {label} ({name}): "
                                         f"match text in any field, filter by field conditions. "
                                         f"Fields: {fields}.")
        if config.allow_insert:
            toolset.add_function(_insert_tool(name, ctx), name=f"insert_{name}",
                                 metadata={**mutation("create", "row", target=label), TRUSTED_RESULT_KEY: True},
                                 description=f"Insert (add, create) a row into the table {label} ({name}). "
                                             f"Fields: {fields}.")
        if config.allow_update:
            toolset.add_function(_update_tool(name, ctx), name=f"update_{name}",
                                 metadata={**mutation("update", "row", target=label, destructive=True),
                                           TRUSTED_RESULT_KEY: True},
                                 description=f"Update (change, edit) a row of the table {label} ({name}) "
                                             f"by id. Fields: {fields}.")
    return toolset


def _checked(name: str, ctx: SkillContext, action: str) -> DataTable:
    """Return the table, or raise ToolFailed saying why the acting user may not do the action.

    The user's role is read again now, so a demotion during a run applies to its next call.
    """
    user = db.session.get(User, ctx.user_id) if ctx.user_id else None
    role = user.role if user is not None and user.active else None
    definition = get_table(name)
    if definition is None:
        raise ToolFailed(f"The table {name} no longer exists.")
    if not allowed(definition, role, "read") or not allowed(definition, role, action):
        who = f"{user.name} (role {role})" if user is not None else "This run's user"
        raise ToolFailed(f"Refused: {who} may not {VERBS[action]} the table {definition.label} ({name}). "
                         f"Only an admin can grant the {action} permission; nothing was changed.")
    return definition


def _query_tool(name: str, config: Config, ctx: SkillContext) -> Callable[..., str]:
    def query(match: str | None = None, conditions: list[Condition] | None = None, limit: int = 10) -> str:
        """Find rows.

        Args:
            match: Text to look for in any field (numbers and dates match exactly).
            conditions: Conditions on fields that every row must meet.
            limit: How many rows to return at most.
        """
        with ctx.app_context():
            definition = _checked(name, ctx, "read")
            filters = [Filter(c.field, OPERATORS[c.op], None if c.value is None else _text(c.value))
                       for c in conditions or []]
            try:
                select = select_rows(definition, match or "", filters)
            except (UnknownField, BadFilter) as error:
                raise ModelRetry(str(error)) from None
            page = page_of_rows(definition, select, 1, max(1, min(limit, config.max_rows)))
            if not page.items:
                return f"No rows of {definition.label} match."
            return (f"{len(page.items)} of {page.total_text} matching rows of {definition.label}:\n\n"
                    + markdown_table(definition, page.items))

    return query


def _insert_tool(name: str, ctx: SkillContext) -> Callable[..., ToolReturn]:
    def insert(values: dict[str, Any]) -> ToolReturn:
        """Insert a row.

        Args:
            values: The new row's values by field name.
        """
        with ctx.app_context():
            definition = _checked(name, ctx, "insert")
            clean, errors = validate(definition, values)
            if errors:
                raise ModelRetry(_errors(definition, errors))
            row_id = insert_row(definition, clean, user_id=ctx.user_id, run_id=ctx.run_id)
            definition = get_table(name)
            return ToolReturn(f"Inserted row {row_id} into {definition.label}:\n\n" + markdown_table(
                definition, [get_row(definition, row_id) or {}]), metadata=_outcome(name, row_id))

    return insert


def _update_tool(name: str, ctx: SkillContext) -> Callable[..., ToolReturn]:
    def update(id: int, values: dict[str, Any]) -> ToolReturn:  # noqa: A002 - the field is called id
        """Change some fields of a row.

        Args:
            id: The row's id.
            values: The fields to change, by name, with their new values.
        """
        with ctx.app_context():
            definition = _checked(name, ctx, "update")
            if get_row(definition, id) is None:
                raise ModelRetry(f"There is no row {id} in {definition.label}; query the table for the id.")
            clean, errors = validate(definition, values, partial=True)
            if errors:
                raise ModelRetry(_errors(definition, errors))
            update_row(definition, id, clean, user_id=ctx.user_id, run_id=ctx.run_id)
            # Only what this call set comes back: the row's other fields hold what anyone with access
            # wrote, and this result is trusted (a later destructive call needs no card because of it).
            changed = "; ".join(f"{field}: {json.dumps(value, ensure_ascii=False, default=str)}"
                                for field, value in clean.items())
            return ToolReturn(f"Updated row {id} of {definition.label}: {changed}.", metadata=_outcome(name, id))

    return update


def _outcome(table: str, row_id: int) -> dict[str, Any]:
    """What action memory keeps of a row write: the row's id and the count, never its values."""
    return {"outcome": {"table": table, "row_ids": [row_id], "count": 1}}


def _errors(definition: DataTable, errors: dict[str, str]) -> str:
    listed = "; ".join(f"{field}: {message}" for field, message in errors.items())
    return f"Fix these values: {listed}. The fields are: {describe_fields(definition)}."


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


skill = Skill(name="table", title="Data tables", config=Config, build=build,
              description=__doc__.strip().split("\n")[0])
