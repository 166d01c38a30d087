"""Rows for the Workspace assistant: list, create, update, delete in batches, with the table's permissions.

A batch is checked whole before anything is written; each row then commits (and emits its table event)
as the data pages' writes do, so the result lists the ids written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.runtime.contract import Invalid
from app.tables.markdown import markdown_table
from app.tables.records import delete_row, get_row, insert_row, page_of_rows, select_rows, update_row, validate
from app.workspace.access import table_for

BATCH = 20


@dataclass
class CreationTotals:
    """Rows created per table during one user turn; kept by the run, so refreshed tools keep counting."""

    cap: int
    created: dict[int, int] = field(default_factory=dict)

    def reserve(self, table_id: int, count: int) -> None:
        """Count `count` new rows for the table, or refuse when the turn's cap would be passed."""
        done = self.created.get(table_id, 0)
        if done + count > self.cap:
            raise Invalid(f"Nothing was created: this turn may create at most {self.cap} rows per table and "
                          f"{done} were created already. Tell the user and let them ask for more in a new message.")
        self.created[table_id] = done + count


def list_rows(user_id: int | None, name: str, match: str = "", limit: int = 20) -> str:
    """Return up to `limit` rows matching the text, as a small table."""
    definition = table_for(user_id, name, "read")
    page = page_of_rows(definition, select_rows(definition, match), 1, max(1, min(limit, 50)))
    if not page.items:
        return f"No rows of {definition.label} match."
    return f"{len(page.items)} of {page.total_text} rows of {definition.label}:\n\n" + markdown_table(
        definition, page.items)


def _batch(items: list, what: str) -> None:
    if not items:
        raise Invalid(f"Give at least one {what}.")
    if len(items) > BATCH:
        raise Invalid(f"Nothing was written: send at most {BATCH} {what}s per call, in several calls.")


def create_rows(user_id: int | None, run_id: str | None, name: str, rows: list[dict[str, Any]],
                totals: CreationTotals) -> dict[str, Any]:
    """Validate every row, then insert them; returns the new ids."""
    definition = table_for(user_id, name, "insert")
    _batch(rows, "row")
    checked = [validate(definition, row) for row in rows]
    problems = [f"row {n + 1}: " + "; ".join(f"{k}: {v}" for k, v in errors.items())
                for n, (_values, errors) in enumerate(checked) if errors]
    if problems:
        raise Invalid("Nothing was written. Fix " + " | ".join(problems))
    totals.reserve(definition.id, len(checked))
    ids = [insert_row(definition, values, user_id=user_id, run_id=run_id) for values, _errors in checked]
    return {"changed": True, "table": definition.name, "created_row_ids": ids, "count": len(ids),
            "summary": f"Created {len(ids)} row{'s' if len(ids) != 1 else ''} in {definition.label}."}


def update_rows(user_id: int | None, run_id: str | None, name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Validate every change ({id, values}), then apply them; returns the ids changed."""
    definition = table_for(user_id, name, "update")
    _batch(rows, "row change")
    checked, problems = [], []
    for row in rows:
        row_id, values = row.get("id"), row.get("values") or {}
        if not isinstance(row_id, int) or get_row(definition, row_id) is None:
            problems.append(f"there is no row {row_id!r}")
            continue
        clean, errors = validate(definition, values, partial=True)
        if errors:
            problems.append(f"row {row_id}: " + "; ".join(f"{k}: {v}" for k, v in errors.items()))
        checked.append((row_id, clean))
    if problems:
        raise Invalid("Nothing was written. Fix " + " | ".join(problems))
    for row_id, clean in checked:
        update_row(definition, row_id, clean, user_id=user_id, run_id=run_id)
    ids = [row_id for row_id, _clean in checked]
    return {"changed": True, "table": definition.name, "updated_row_ids": ids, "count": len(ids),
            "summary": f"Updated {len(ids)} row{'s' if len(ids) != 1 else ''} of {definition.label}."}


def delete_rows(user_id: int | None, run_id: str | None, name: str, ids: list[int]) -> dict[str, Any]:
    """Delete the rows by id; ids that do not exist are reported, not an error."""
    definition = table_for(user_id, name, "delete")
    _batch(ids, "row id")
    deleted = [row_id for row_id in dict.fromkeys(ids)
               if delete_row(definition, row_id, user_id=user_id, run_id=run_id)]
    missing = [row_id for row_id in ids if row_id not in deleted]
    result = {"changed": bool(deleted), "table": definition.name, "deleted_row_ids": deleted,
              "count": len(deleted), "summary": f"Deleted {len(deleted)} row(s) of {definition.label}."}
    if missing:
        result["not_found"] = missing
    return result
