"""A skill's settings as a WTForms form generated from its pydantic Config, which stays the one validator.

The form layer is WTForms, as everywhere in the app; the rules are the Config's, the same ones that judge
stored settings (`Skill.parse`). Each field only turns the submitted text into the value pydantic reads
(a checkbox into a bool, lines into a list, JSON into data) and shows it back; pydantic's messages go
beside the fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError
from wtforms import Field
from wtforms.form import BaseForm
from wtforms.utils import unset_value


@dataclass(frozen=True)
class Shape:
    """What the Config's JSON schema says about one setting, for the field that edits it."""

    kind: str  # checkbox | number | select | text | textarea | lines | json
    choices: tuple[Any, ...] = ()
    required: bool = False
    optional: bool = False  # None is allowed: an empty field is None
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


class SettingField(Field):
    """One setting: `data` is the value pydantic will read (`unset_value` leaves the Config's default)."""

    def __init__(self, label=None, validators=None, shape: Shape | None = None, **kwargs) -> None:
        super().__init__(label, validators, **kwargs)
        shape = shape or Shape("text")
        self.kind, self.choices, self.attrs = shape.kind, list(shape.choices), shape.attrs
        self.required, self.optional = shape.required, shape.optional

    def process_formdata(self, valuelist) -> None:
        text = valuelist[0] if valuelist else None
        if self.kind == "checkbox":
            self.data = text is not None
        elif text is None or (not text.strip() and self.kind not in ("text", "textarea")):
            self.data = None if self.optional else unset_value
        elif self.kind == "lines":
            self.data = [line.strip() for line in text.splitlines() if line.strip()]
        elif self.kind == "json":
            try:
                self.data = json.loads(text)
            except ValueError as error:
                self.data = unset_value
                raise ValueError(f"Not valid JSON: {error}") from None
        elif self.kind == "text" and self.optional and not text.strip():
            self.data = None
        else:
            self.data = text

    @property
    def shown(self) -> Any:
        """The value as the form shows it: lines one per line, JSON indented, the default when not given."""
        value = self.default if self.data is unset_value else self.data
        if self.kind == "lines" and isinstance(value, list):
            return "\n".join(str(v) for v in value)
        if self.kind == "json" and value is not None and not isinstance(value, str):
            return json.dumps(value, indent=2)
        return value


@cache
def _fields(config: type[BaseModel]) -> tuple[tuple[str, Any], ...]:
    """The unbound fields of a Config's form, in the Config's order."""
    schema = config.model_json_schema()
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    fields = []
    for name, raw in schema.get("properties", {}).items():
        prop, optional = _resolve(raw, defs)
        attrs = {k: prop[k] for k in ("minimum", "maximum") if k in prop}
        if "maxLength" in prop:
            attrs["maxlength"] = prop["maxLength"]
        if prop.get("type") == "number":
            attrs["step"] = "any"
        shape = Shape(_kind(prop), tuple(prop.get("enum", [])), name in required, optional, attrs)
        fields.append((name, SettingField(prop.get("title", name.replace("_", " ").capitalize()), shape=shape,
                                          default=prop.get("default"),
                                          description=raw.get("description") or prop.get("description", ""))))
    return tuple(fields)


class SettingsForm(BaseForm):
    """The settings form of a Config, from submitted text (`formdata`) or from settings as stored (`data`).

    After `validate()`, `settings` holds what to store (the Config's dump, or what was given when it does
    not validate) and `problems` each setting's first error by name, `__all__` for the whole.
    """

    def __init__(self, config: type[BaseModel], prefix: str = "", formdata=None,
                 data: dict[str, Any] | None = None) -> None:
        super().__init__(_fields(config), prefix=prefix)
        self.config = config
        self.given = dict(data or {}) if formdata is None else None  # stored settings are judged as given
        self.process(formdata, data=data or {})
        self.problems: dict[str, str] = {}
        self.settings: dict[str, Any] = self._raw()

    def _raw(self) -> dict[str, Any]:
        if self.given is not None:
            return dict(self.given)
        return {name: f.data for name, f in self._fields.items() if f.data is not unset_value}

    def validate(self, extra_validators=None) -> bool:
        """Judge the settings by the Config; put each message beside its field."""
        self.problems = {}
        for name, setting in self._fields.items():
            setting.errors = list(setting.process_errors)
            if setting.errors:
                self.problems[name] = setting.errors[0]
        raw = self._raw()
        try:
            self.settings = self.config.model_validate(raw).model_dump(mode="json")
        except ValidationError as error:
            self.settings = raw
            for item in error.errors():
                self.add_error(str(item["loc"][0]) if item["loc"] else "__all__",
                               item["msg"].removeprefix("Value error, "))
        else:
            for name, value in self.settings.items():  # show the values as they will be stored
                if name in self._fields:
                    self._fields[name].data = value
        return not self.problems

    def add_error(self, name: str, message: str) -> None:
        """Record a problem with setting `name` (or `__all__`), unless it already has one."""
        if name in self.problems:
            return
        self.problems[name] = message
        if name in self._fields:
            self._fields[name].errors.append(message)
