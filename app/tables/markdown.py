"""Rows as a small Markdown table, for tool results and instructions (the chat renders it as a table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.models import DataTable
from app.tables.fields import display

CELL_CHARS = 80
MAX_COLUMNS = 10


def describe_fields(definition: DataTable) -> str:
    """List the fields with their kinds (and choices), for a tool description."""
    parts = ["id (integer)"]
    for field in definition.fields:
        extra = f": {', '.join(field.choices)}" if field.kind == "choice" and field.choices else ""
        required = ", required" if field.required else ""
        parts.append(f"{field.name} ({field.kind}{extra}{required})")
    parts.append("created_at (datetime), updated_at (datetime)")
    return "; ".join(parts)


def markdown_table(definition: DataTable, rows: Sequence[dict[str, Any]]) -> str:
    """Render rows as a Markdown table: id and up to ten fields, each cell cut short."""
    fields = list(definition.fields[:MAX_COLUMNS])
    lines = ["| id | " + " | ".join(_cell(f.name) for f in fields) + " |",
             "|---|" + "---|" * len(fields)]
    for row in rows:
        cells = [_cell(display(f.kind, row.get(f.name))) for f in fields]
        lines.append(f"| {row.get('id')} | " + " | ".join(cells) + " |")
    if len(definition.fields) > MAX_COLUMNS:
        lines.append(f"\n(Showing {MAX_COLUMNS} of {len(definition.fields)} fields.)")
    return "\n".join(lines)


def _cell(text: str) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
