"""Tables and fields for the Workspace assistant: list, describe, create (reusing by exact name), update."""

from __future__ import annotations

from typing import Any

from app.extensions import db
from app.models import DataTable
from app.runtime.contract import Invalid
from app.tables.fields import KINDS, slugify
from app.tables.markdown import describe_fields
from app.tables.permissions import readable_tables
from app.tables.records import insert_row, validate
from app.tables.schema import SchemaError, add_field, change_field, create_table, get_table
from app.tables.settings import apply_settings
from app.workspace.access import require_admin, role_of, table_for
from app.workspace.reuse import NO_SAMPLE_DATA, differences, reused, sample_data_authorized

TABLE_CHANGES = ("label", "description", "permissions", "add_fields", "change_fields")
FIELD_CHANGES = ("name", "label", "required", "choices")
NO_TABLE = ("No table you can read matches {search!r}. Create nothing yet: ask the user (ask_user_question) "
            "whether to create a table with sample data, agree on its fields first, or use data they point to.")


def table_summary(definition: DataTable) -> dict[str, Any]:
    """Return a table as the tools show it: id, name, label and its fields with their kinds."""
    return {"id": definition.id, "name": definition.name, "label": definition.label,
            "description": definition.description, "fields": describe_fields(definition)}


def list_tables(user_id: int | None, search: str = "") -> dict[str, Any]:
    """List the tables the acting user may read, those matching `search` (name or label) when given."""
    tables = readable_tables(role_of(user_id))
    words = search.strip().lower()
    if words:
        tables = [t for t in tables if words in t.name.lower() or words in t.label.lower()]
    if not tables:
        return {"tables": [], "summary": NO_TABLE.format(search=search) if words else "There are no tables."}
    return {"tables": [{"id": t.id, "name": t.name, "label": t.label} for t in tables]}


def describe_table(user_id: int | None, name: str) -> DataTable:
    """Return a table the acting user may read."""
    return table_for(user_id, _name_of(name), "read")


def _name_of(name: str) -> str:
    """Accept a table's name or its label as written (`Contacts` is the table `contacts`)."""
    name = name.strip()
    if get_table(name) is not None:
        return name
    by_label = db.session.scalar(db.select(DataTable.name).where(DataTable.label == name))
    return by_label or slugify(name)


def _field_spec(spec: dict[str, Any]) -> dict[str, Any]:
    unknown = set(spec) - {"name", "label", "kind", "required", "choices"}
    if unknown:
        raise Invalid(f"A field has only name, label, kind, required and choices; not {', '.join(sorted(unknown))}.")
    label = str(spec.get("label") or spec.get("name") or "").strip()
    name = str(spec.get("name") or slugify(label)).strip()
    name = name if name == name.lower() and " " not in name else slugify(name)
    kind = spec.get("kind") or "text"
    if kind not in KINDS:
        raise Invalid(f"The field {name} has the kind {kind!r}; use one of {', '.join(KINDS)}.")
    return {"name": name, "label": label or name, "kind": kind, "required": bool(spec.get("required", False)),
            "choices": [str(c) for c in spec.get("choices") or []]}


def create_table_with_fields(user_id: int | None, label: str, fields: list[dict[str, Any]],
                             description: str = "", name: str | None = None, confirm: bool = False,
                             sample_rows: list[dict[str, Any]] | None = None, sample_data: bool = False,
                             prompt: str | None = None) -> dict[str, Any]:
    """Create a table with its fields in one commit, or reuse the table of the same name (see reuse.py)."""
    require_admin(user_id, "create tables")
    specs = [_field_spec(spec) for spec in fields]
    table_name = (name or slugify(label)).strip()
    if sample_rows and not (sample_data and sample_data_authorized(prompt)):
        return {"changed": False, "summary": NO_SAMPLE_DATA}
    existing = get_table(table_name) or db.session.scalar(db.select(DataTable).where(DataTable.label == label))
    if existing is not None:
        return _reconcile(existing, label, description, specs, confirm)
    try:
        definition = create_table(table_name, label, description)
        for spec in specs:
            add_field(definition, spec["name"], spec["label"], spec["kind"], spec["required"], spec["choices"])
    except SchemaError as error:
        db.session.rollback()
        raise Invalid(f"Nothing was created: {error}") from None
    db.session.commit()
    result = {"changed": True, "created": True, **table_summary(definition)}
    if sample_rows:
        result["sample_row_ids"] = _insert_samples(definition, sample_rows, user_id)
    result["summary"] = (f"Created the table {definition.label} ({definition.name}, id {definition.id}) with "
                         f"the fields {', '.join(s['name'] for s in specs) or 'none'}.")
    return result


def _reconcile(existing: DataTable, label: str, description: str, specs: list[dict[str, Any]],
               confirm: bool) -> dict[str, Any]:
    diffs = differences({"label": existing.label, "description": existing.description},
                        {"label": label or None, "description": description or None})
    missing, unapplied = [], []
    for spec in specs:
        field = existing.field(spec["name"])
        if field is None:
            missing.append(spec)
            diffs.append(f"field {spec['name']} ({spec['kind']}) is missing from the existing table")
        elif field.kind != spec["kind"]:
            diffs.append(f"field {spec['name']} is {field.kind}, the request says {spec['kind']}")
            unapplied.append(f"field {spec['name']} stays {field.kind} (a field's kind cannot be changed)")
    if not confirm or not missing:
        result = reused("table", existing.name, existing.id, diffs, table_summary(existing))
        if unapplied:
            result["unapplied"] = unapplied
        return result
    try:
        for spec in missing:
            add_field(existing, spec["name"], spec["label"], spec["kind"], spec["required"], spec["choices"])
    except SchemaError as error:
        db.session.rollback()
        raise Invalid(f"Nothing was changed: {error}") from None
    db.session.commit()
    added = ", ".join(spec["name"] for spec in missing)
    return {"changed": True, "reused": True, **table_summary(existing), "added_fields": [s["name"] for s in missing],
            "unapplied": unapplied + [d for d in diffs if d.startswith(("label", "description"))],
            "summary": f"Added the fields {added} to the existing table {existing.label} (id {existing.id})."}


def _insert_samples(definition: DataTable, rows: list[dict[str, Any]], user_id: int | None) -> list[int]:
    checked = [validate(definition, row) for row in rows[:20]]
    problems = [f"sample row {n + 1}: {errors}" for n, (_values, errors) in enumerate(checked) if errors]
    if problems:
        raise Invalid("The table was created but no sample row: " + "; ".join(problems))
    return [insert_row(definition, values, user_id=user_id) for values, _errors in checked]


def update_table(user_id: int | None, name: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply changes to a table's settings and fields; unsupported properties refuse the whole update.

    The settings commit together first; each field change then commits on its own, so a later failure
    leaves the result `partial` with what was applied and what was not.
    """
    require_admin(user_id, "change tables")
    unknown = sorted(set(changes) - set(TABLE_CHANGES))
    if unknown:
        raise Invalid(f"Nothing was changed: {', '.join(unknown)} cannot be updated; "
                      f"a table's changes are {', '.join(TABLE_CHANGES)}.")
    for key, entry in (changes.get("change_fields") or {}).items():
        bad = sorted(set(entry) - set(FIELD_CHANGES)) if isinstance(entry, dict) else ["(not an object)"]
        if bad:
            raise Invalid(f"Nothing was changed: the field {key} cannot get {', '.join(bad)}; "
                          f"a field's changes are {', '.join(FIELD_CHANGES)}.")
    definition = describe_table(user_id, name)
    additions = [_field_spec(spec) for spec in changes.get("add_fields") or []]
    kept = apply_settings(definition, changes.get("label"), changes.get("description"), changes.get("permissions"))
    db.session.commit()
    applied = [key for key in ("label", "description", "permissions") if key in changes and key not in kept]
    failed: dict[str, str] = {key: f"kept the existing value: {why}" for key, why in kept.items()}
    for spec in additions:
        _step(applied, failed, f"add field {spec['name']}", lambda spec=spec: add_field(
            definition, spec["name"], spec["label"], spec["kind"], spec["required"], spec["choices"]))
    for key, entry in (changes.get("change_fields") or {}).items():
        field = definition.field(key)
        if field is None:
            failed[f"change field {key}"] = "there is no such field"
            continue
        _step(applied, failed, f"change field {key}", lambda field=field, entry=entry: change_field(
            definition, field, entry.get("name", field.name), entry.get("label", field.label),
            bool(entry.get("required", field.required)), entry.get("choices")))
    result = {"changed": bool(applied), "applied": applied, **table_summary(definition)}
    if failed:
        result["not_applied"] = failed
        result["partial"] = bool(applied)
    return result


def _step(applied: list[str], failed: dict[str, str], what: str, change) -> None:
    try:
        change()
    except SchemaError as error:
        db.session.rollback()
        failed[what] = str(error)
    else:
        db.session.commit()
        applied.append(what)
