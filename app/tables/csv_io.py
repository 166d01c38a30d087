"""CSV import (kinds inferred and confirmed, bad rows listed by line, nothing stored unconfirmed) and export.

An upload is kept in IMPORTS_PATH (instance/imports/) under a random token between the preview and the
confirmation; the confirmation reads it again with the kinds the admin chose, so what is
imported is exactly what the last preview showed.

Formulas (OWASP CSV injection): an exported text cell that a spreadsheet would evaluate (starting with
=, +, -, @, tab or CR), or that already starts with quotes before one of them, gets one more `'` in
front; the import takes one `'` off such a text cell. So an export imports back exactly (no doubled
prefix, and text that really starts with `'=` keeps it), while numbers, dates and yes/no stay as they are.
"""

from __future__ import annotations

import csv
import io
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import select

from app.extensions import db
from app.models import DataTable
from app.models.base import utcnow
from app.tables.fields import (
    KINDS,
    SYSTEM_COLUMNS,
    TEXT_KINDS,
    TEXT_MAX,
    check_name,
    jsonable,
    parse_kind,
    plain_decimal,
    slugify,
)
from app.tables.schema import add_field, sql_table

INFERABLE = ("boolean", "integer", "decimal", "date", "datetime")
IMPORTABLE_KINDS = tuple(k for k in KINDS if k != "link")
SKIP = "skip"
INFER_SAMPLE = 2_000
CHOICES_MAX = 50
BATCH = 1_000
KEEP_UPLOADS_SECONDS = 24 * 3600
TOKEN = re.compile(r"^[0-9a-f]{32}$")
QUOTED_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
"""A text a spreadsheet would run as a formula, behind any number of `'` (each export adds one)."""


class ImportError_(ValueError):
    """The file cannot be imported at all (not UTF-8, no header, expired upload)."""


@dataclass
class Column:
    header: str
    index: int
    name: str
    label: str
    kind: str
    new: bool
    inferred: str | None = None
    choices: list[str] = field(default_factory=list)


@dataclass
class BadRow:
    line: int
    reasons: list[str]


@dataclass
class Plan:
    """What an import would do: columns and their kinds, rows that pass, rows that do not and why."""

    token: str
    columns: list[Column]
    ignored: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    bad: list[BadRow] = field(default_factory=list)
    samples: list[list[str]] = field(default_factory=list)

    @property
    def new_columns(self) -> list[Column]:
        return [c for c in self.columns if c.new and c.kind != SKIP]

    @property
    def imported_columns(self) -> list[Column]:
        return [c for c in self.columns if c.kind != SKIP]


def _upload_dir() -> Path:
    return Path(current_app.config.get("IMPORTS_PATH") or Path(current_app.instance_path) / "imports")


def save_upload(data: bytes) -> str:
    """Keep an uploaded file until it is confirmed; returns its token. Old uploads are removed."""
    folder = _upload_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.csv"):
        if time.time() - old.stat().st_mtime > KEEP_UPLOADS_SECONDS:
            old.unlink(missing_ok=True)
    token = secrets.token_hex(16)
    (folder / f"{token}.csv").write_bytes(data)
    return token


def load_upload(token: str) -> str:
    """Return the text of a kept upload; raise ImportError_ when it is gone or not UTF-8."""
    path = _upload_dir() / f"{token}.csv"
    if not TOKEN.match(token or "") or not path.exists():
        raise ImportError_("The uploaded file is no longer here; upload it again.")
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportError_("The file is not UTF-8 text; save it as CSV UTF-8 and upload it again.") from None


def discard_upload(token: str) -> None:
    """Forget a kept upload."""
    if TOKEN.match(token or ""):
        (_upload_dir() / f"{token}.csv").unlink(missing_ok=True)


def _reader(text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number where the record starts, values) for each non-empty record."""
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    start = 1
    for values in reader:
        if any(v.strip() for v in values):
            yield start, values
        start = reader.line_num + 1


def infer_kind(values: list[str]) -> str:
    """Return the most specific kind that most of the non-empty values fit (the rest become bad rows)."""
    values = [v.strip() for v in values if v.strip()][:INFER_SAMPLE]
    if not values:
        return "text"
    for kind in INFERABLE:
        fits = sum(1 for v in values if _fits(kind, v))
        if fits * 2 > len(values):
            return kind
    return "long_text" if any(len(v) > TEXT_MAX or "\n" in v for v in values) else "text"


def _fits(kind: str, value: str) -> bool:
    if kind == "boolean" and value.lower() not in ("true", "false", "yes", "no"):
        return False  # 0 and 1 are more likely numbers
    if kind == "datetime" and len(value) <= 10:
        return False  # a bare date is a date
    try:
        parse_kind(kind, value)
    except ValueError:
        return False
    return True


def plan_import(definition: DataTable, token: str, text: str, kinds: dict[str, str] | None = None) -> Plan:
    """Read the whole file and plan the import; `kinds` are the admin's choices for new columns by index."""
    records = _reader(text)
    first = next(records, None)
    if first is None:
        raise ImportError_("The file is empty.")
    _line, header = first
    body = list(records)
    plan = Plan(token=token, columns=[])
    taken = {f.name for f in definition.fields}
    by_label = {f.label.strip().lower(): f for f in definition.fields}
    for index, raw_header in enumerate(header):
        title = raw_header.strip()
        existing = definition.field(title) or by_label.get(title.lower()) or definition.field(slugify(title))
        if title.lower() in SYSTEM_COLUMNS:
            plan.ignored.append(title)
            continue
        if existing is not None:
            plan.columns.append(Column(title, index, existing.name, existing.label, existing.kind, False,
                                       choices=list(existing.choices or [])))
            continue
        name = _free_name(slugify(title), taken)
        taken.add(name)
        inferred = infer_kind([row[index] for _line, row in body if index < len(row)])
        chosen = (kinds or {}).get(str(index), inferred)
        column = Column(title, index, name, title or name,
                        chosen if chosen in IMPORTABLE_KINDS or chosen == SKIP else inferred, True, inferred)
        if column.kind == "choice":
            column.choices = sorted({row[index].strip() for _l, row in body
                                     if index < len(row) and row[index].strip()})
            if len(column.choices) > CHOICES_MAX:
                plan.problems.append(f"Column {title!r} has {len(column.choices)} different values; a choice "
                                     f"field holds at most {CHOICES_MAX}. Import it as text.")
        plan.columns.append(column)
    present = {c.name for c in plan.imported_columns}
    for missing in (f for f in definition.fields if f.required and f.name not in present):
        plan.problems.append(f"The file has no column for the required field {missing.label!r}.")
    required = {f.name for f in definition.fields if f.required}
    for line, values in body:
        _check_row(plan, required, len(header), line, values)
    for link in (f for f in definition.fields if f.kind == "link" and f.name in present):
        _check_links(plan, link)
    plan.bad.sort(key=lambda bad: bad.line)
    plan.samples = [[_show(row.get(c.name)) for c in plan.columns] for _line, row in plan.rows[:5]]
    return plan


def _free_name(name: str, taken: set[str]) -> str:
    if check_name(name) is not None:
        name = "field"
    candidate, n = name, 2
    while candidate in taken:
        candidate = f"{name[:36]}_{n}"
        n += 1
    return candidate


def _check_row(plan: Plan, required: set[str], width: int, line: int, values: list[str]) -> None:
    if len(values) != width:
        plan.bad.append(BadRow(line, [f"has {len(values)} values; the header has {width}"]))
        return
    row: dict[str, Any] = {}
    reasons = []
    for column in plan.imported_columns:
        try:
            value = parse_kind(column.kind, _unquoted(column.kind, values[column.index]), column.choices)
        except ValueError as error:
            reasons.append(f"{column.header}: {error}")
            continue
        if value is None and column.name in required:
            reasons.append(f"{column.header}: a value is required")
        row[column.name] = value
    if reasons:
        plan.bad.append(BadRow(line, reasons))
    else:
        plan.rows.append((line, row))


def _check_links(plan: Plan, link) -> None:
    """Move the rows whose link points at no row to the bad rows (one query per 500 ids)."""
    if link.link_table is None:
        return
    wanted = sorted({row[link.name] for _line, row in plan.rows if row.get(link.name) is not None})
    table = sql_table(link.link_table)
    found: set[int] = set()
    for start in range(0, len(wanted), 500):
        found.update(db.session.scalars(select(table.c.id).where(table.c.id.in_(wanted[start:start + 500]))))
    kept = []
    for line, row in plan.rows:
        value = row.get(link.name)
        if value is not None and value not in found:
            plan.bad.append(BadRow(line, [f"{link.label}: there is no row {value} in the linked table"]))
        else:
            kept.append((line, row))
    plan.rows = kept


def import_rows(definition: DataTable, plan: Plan) -> int:
    """Create the new fields and insert the rows that passed, in one transaction; returns the count.

    Imports do not emit table events: a trigger on insert would otherwise start one agent run per row.
    """
    for column in plan.new_columns:
        add_field(definition, column.name, column.label[:80], column.kind, choices=column.choices)
    table = sql_table(definition)
    now = utcnow()
    names = [c.name for c in plan.imported_columns]
    batch: list[dict[str, Any]] = []
    for _line, row in plan.rows:
        batch.append({**{name: row.get(name) for name in names}, "created_at": now, "updated_at": now})
        if len(batch) >= BATCH:
            db.session.execute(table.insert(), batch)
            batch = []
    if batch:
        db.session.execute(table.insert(), batch)
    return len(plan.rows)


def export_lines(definition: DataTable) -> Iterator[str]:
    """Yield the table as CSV, a chunk at a time; text a spreadsheet would run as a formula is quoted."""
    # Read the definition now: the response streams after the view's session has gone.
    fields = [(f.name, f.kind) for f in definition.fields]
    table = sql_table(definition)

    def generate() -> Iterator[str]:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["id", *(name for name, _kind in fields), "created_at", "updated_at"])
        last = 0
        while True:
            # Keyset batches: no cursor stays open between the chunks the client reads.
            batch = db.session.execute(select(table).where(table.c.id > last).order_by(table.c.id)
                                       .limit(BATCH)).mappings().all()
            for row in batch:
                writer.writerow([row["id"], *(_cell(kind, row[name]) for name, kind in fields),
                                 jsonable(row["created_at"]), jsonable(row["updated_at"])])
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
            if len(batch) < BATCH:
                return
            last = batch[-1]["id"]

    return generate()


def _cell(kind: str, value: Any) -> Any:
    if value is None:
        return ""
    if kind == "boolean":
        return "true" if value else "false"
    if kind in TEXT_KINDS and QUOTED_FORMULA.match(str(value)):
        return "'" + str(value)
    return jsonable(value)


def _unquoted(kind: str, raw: str) -> str:
    """Take off the `'` an export put before a text cell a spreadsheet would run."""
    return raw[1:] if kind in TEXT_KINDS and raw.startswith("'") and QUOTED_FORMULA.match(raw) else raw


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    text = plain_decimal(value) if hasattr(value, "normalize") else str(jsonable(value))
    return text if len(text) <= 80 else text[:79] + "…"
