"""Settings forms generated from a skill's pydantic Config: types, defaults, descriptions, errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError


@dataclass
class FormField:
    name: str
    label: str
    kind: str  # checkbox | number | select | text | textarea | lines | json
    value: Any
    description: str = ""
    choices: list[Any] = field(default_factory=list)
    required: bool = False
    optional: bool = False
    error: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Unwrap $ref and Optional[...] (anyOf with null); tell whether null is allowed."""
    optional = False
    if "anyOf" in prop:
        options = [p for p in prop["anyOf"] if p.get("type") != "null"]
        optional = len(options) < len(prop["anyOf"])
        merged = {k: v for k, v in prop.items() if k != "anyOf"}
        merged.update(options[0] if len(options) == 1 else {"type": "json"})
        prop = merged
    if "$ref" in prop:
        prop = {**defs.get(prop["$ref"].split("/")[-1], {}), **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop, optional


def _kind(prop: dict[str, Any]) -> str:
    kind = prop.get("type")
    if "enum" in prop:
        return "select"
    if kind == "boolean":
        return "checkbox"
    if kind in ("integer", "number"):
        return "number"
    if kind == "array" and prop.get("items", {}).get("type") == "string":
        return "lines"
    if kind == "string":
        widget = prop.get("widget")
        if widget in ("textarea", "code") or prop.get("maxLength", 0) > 300:
            return "textarea"
        return "text"
    return "json"


def form_fields(config: type[BaseModel], values: dict[str, Any] | None = None,
                errors: dict[str, str] | None = None, prefix: str = "") -> list[FormField]:
    """Describe the form for a Config, filled with values (defaults where missing)."""
    schema = config.model_json_schema()
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    values = values or {}
    errors = errors or {}
    fields = []
    for name, raw in schema.get("properties", {}).items():
        prop, optional = _resolve(raw, defs)
        kind = _kind(prop)
        value = values.get(name, prop.get("default"))
        if kind == "lines" and isinstance(value, list):
            value = "\n".join(str(v) for v in value)
        elif kind == "json" and value is not None and not isinstance(value, str):
            value = json.dumps(value, indent=2)
        attrs = {k: prop[k] for k in ("minimum", "maximum") if k in prop}
        if "maxLength" in prop:
            attrs["maxlength"] = prop["maxLength"]
        if prop.get("type") == "number":
            attrs["step"] = "any"
        fields.append(FormField(
            name=prefix + name, label=prop.get("title", name.replace("_", " ").capitalize()), kind=kind,
            value=value, description=raw.get("description") or prop.get("description", ""),
            choices=list(prop.get("enum", [])), required=name in required, optional=optional,
            error=errors.get(name), attrs=attrs,
        ))
    return fields


def parse_form(config: type[BaseModel], form: Any, prefix: str = "") -> tuple[dict[str, Any], dict[str, str]]:
    """Read a submitted settings form; return (settings as stored, errors by field name)."""
    schema = config.model_json_schema()
    defs = schema.get("$defs", {})
    raw: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, prop in schema.get("properties", {}).items():
        prop, optional = _resolve(prop, defs)
        kind = _kind(prop)
        text = form.get(prefix + name)
        if kind == "checkbox":
            raw[name] = text is not None
        elif text is None or (text.strip() == "" and kind != "text" and kind != "textarea"):
            if optional:
                raw[name] = None
        elif kind == "lines":
            raw[name] = [line.strip() for line in text.splitlines() if line.strip()]
        elif kind == "json":
            try:
                raw[name] = json.loads(text)
            except ValueError as error:
                errors[name] = f"Not valid JSON: {error}"
        elif kind == "text" and optional and text.strip() == "":
            raw[name] = None
        else:
            raw[name] = text
    try:
        settings = config.model_validate(raw).model_dump(mode="json")
    except ValidationError as error:
        for item in error.errors():
            key = str(item["loc"][0]) if item["loc"] else "__all__"
            errors.setdefault(key, item["msg"].removeprefix("Value error, "))
        settings = raw
    return settings, errors
