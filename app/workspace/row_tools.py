"""Per-table row tools `create/update/delete_rows_in_table_<id>`, built from the table's current fields.

A table's tools are loaded when the run describes or creates the table; they then stay for the rest
of the run. Before each model request the toolset compares each loaded table's schema with the one
its tools were built from and rebuilds them under the same names when it changed. The creation
totals belong to the run (`CreationTotals`), not to the tools, so a rebuild keeps counting.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from pydantic_ai import ModelRetry, Tool
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, FunctionToolset

from app.models import DataTable
from app.runtime.contract import GROUP_KEY, TRUSTED_RESULT_KEY, mutation
from app.tables.markdown import describe_fields
from app.tables.permissions import readable_tables
from app.tables.schema import get_table
from app.workspace import rows
from app.workspace.access import role_of
from app.workspace.rows import BATCH, CreationTotals

JSON_TYPES = {"integer": ["integer", "string"], "decimal": ["number", "string"], "boolean": ["boolean", "string"],
              "link": ["integer"]}

# Row writes answer in the server's words (ids and counts); updating or deleting rows destroys what was there.
ROW_EFFECTS = {"create": {}, "update": {"destructive": True}, "delete": {"destructive": True}}
Guard = Callable[[Callable[[], Any]], Any]


def _write_tool(function: Callable[..., Any], name: str, description: str, schema: dict[str, Any], action: str,
                label: str) -> Tool:
    """A row-writing tool: its arguments checked against the schema the model was given (from_schema skips that)."""
    validator = Draft202012Validator(schema)

    def checked(**args: Any) -> Any:
        problem = next(iter(validator.iter_errors(args)), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "arguments"
            raise ModelRetry(f"Nothing was written: {where}: {problem.message}. Follow the tool's schema.")
        return function(**args)

    tool = Tool.from_schema(checked, name, description, schema, sequential=True)
    tool.metadata = {GROUP_KEY: "data", TRUSTED_RESULT_KEY: True,
                     **mutation(action, "row", target=label, **ROW_EFFECTS[action])}
    return tool


def schema_key(definition: DataTable) -> tuple:
    """Return what the row tools depend on: each field's name, kind, required flag and choices."""
    return tuple((f.name, f.kind, f.required, tuple(f.choices or ())) for f in definition.fields)


def _row_schema(definition: DataTable, partial: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for f in definition.fields:
        prop: dict[str, Any] = {"type": JSON_TYPES.get(f.kind, ["string"]) + ["null"], "description": f.label}
        if f.kind == "choice" and f.choices:
            prop["description"] += f" (one of: {', '.join(f.choices)})"
        properties[f.name] = prop
    required = [] if partial else [f.name for f in definition.fields if f.required]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@dataclass
class RowTools:
    """The run's loaded tables and their tools; `toolset(ctx)` is a pydantic-ai DynamicToolset function."""

    user_id: int | None
    run_id: str | None
    totals: CreationTotals
    guard: Guard
    in_app: Callable[[], Any]
    loaded: list[str] = field(default_factory=list)
    _built: dict[str, tuple[tuple, FunctionToolset]] = field(default_factory=dict)
    _combined: AbstractToolset | None = None
    _named: bool = False

    def _load_named(self, prompt: str) -> None:
        words = set(re.findall(r"[\w]+", prompt.lower()))
        for definition in readable_tables(role_of(self.user_id)):
            if definition.name in words or definition.label.lower() in words:
                self.load(definition.name)

    def load(self, name: str) -> None:
        """Make the table's row tools available for the rest of the run."""
        if name not in self.loaded:
            self.loaded.append(name)

    def toolset(self, ctx: Any) -> AbstractToolset | None:
        """Return the loaded tables' tools, rebuilt for a table whose schema changed (same names).

        At the run's first step, the tables the user's message names (that they may read) are loaded.
        """
        changed = False
        with self.in_app():
            if not self._named:
                self._named = True
                self._load_named(ctx.prompt if isinstance(ctx.prompt, str) else "")
            for name in list(self.loaded):
                definition = get_table(name)
                if definition is None:
                    self.loaded.remove(name)
                    changed = changed or self._built.pop(name, None) is not None
                    continue
                key = schema_key(definition)
                if name not in self._built or self._built[name][0] != key:
                    self._built[name] = (key, self._tools_for(definition))
                    changed = True
        if changed or self._combined is None:
            self._combined = CombinedToolset([tools for _key, tools in self._built.values()])
        return self._combined

    def _tools_for(self, definition: DataTable) -> FunctionToolset:
        name, label, table_id = definition.name, definition.label, definition.id
        fields = describe_fields(definition)
        batch = {"type": "array", "maxItems": BATCH, "minItems": 1}

        def create(rows_: list[dict[str, Any]]) -> Any:
            return self.guard(lambda: rows.create_rows(self.user_id, self.run_id, name, rows_, self.totals))

        def update(changes: list[dict[str, Any]]) -> Any:
            return self.guard(lambda: rows.update_rows(self.user_id, self.run_id, name, changes))

        def delete(ids: list[int]) -> Any:
            return self.guard(lambda: rows.delete_rows(self.user_id, self.run_id, name, ids))

        toolset = FunctionToolset()
        toolset.add_tool(_write_tool(
            lambda rows: create(rows), f"create_rows_in_table_{table_id}",
            f"Create (add, insert) rows in the table {label} ({name}), at most {BATCH} per call. Fields: {fields}.",
            {"type": "object", "required": ["rows"], "additionalProperties": False,
             "properties": {"rows": {**batch, "items": _row_schema(definition, partial=False)}}}, "create", label))
        toolset.add_tool(_write_tool(
            lambda changes: update(changes), f"update_rows_in_table_{table_id}",
            f"Update (change, edit) rows of the table {label} ({name}) by id, at most {BATCH} per call. "
            f"Fields: {fields}.",
            {"type": "object", "required": ["changes"], "additionalProperties": False,
             "properties": {"changes": {**batch, "items": {
                 "type": "object", "required": ["id", "values"], "additionalProperties": False,
                 "properties": {"id": {"type": "integer"}, "values": _row_schema(definition, partial=True)}}}}},
            "update", label))
        toolset.add_tool(_write_tool(
            lambda ids: delete(ids), f"delete_rows_in_table_{table_id}",
            f"Delete (remove) rows of the table {label} ({name}) by id, at most {BATCH} per call.",
            {"type": "object", "required": ["ids"], "additionalProperties": False,
             "properties": {"ids": {**batch, "items": {"type": "integer"}}}}, "delete", label))
        return toolset
