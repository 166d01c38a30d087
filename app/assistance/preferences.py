"""A user's preferences: namespaces of keys, `ui` for Skilldesk's own settings and one per client.

Stored in `users.preferences` as `{namespace: {key: value}}`. Preferences are untrusted input: they
change how a page looks, never what a user may see or do. Any client may keep its own namespace;
the limits below are the same for all of them:

| limit | value |
|---|---|
| namespaces per user | 10 |
| keys per namespace | 50 |
| bytes per value (compact JSON) | 1,000 |
| total bytes (compact JSON of everything) | 16,000 |
| namespace name | `^[a-z][a-z0-9_-]{0,31}$` |
| key name | `^[A-Za-z][A-Za-z0-9_.-]{0,63}$` |

The `ui` namespace belongs to Skilldesk: only the keys of `UI_SETTINGS`, each checked against its
schema (the proposal subset, so the same schema tells a client what it may propose).
"""

from __future__ import annotations

import re
from typing import Any

from app.models import User
from app.policy.schema_subset import ProposalSchema, compact_json, compile_schema

MAX_NAMESPACES = 10
MAX_KEYS = 50
MAX_VALUE_BYTES = 1000
MAX_TOTAL_BYTES = 16_000
NAMESPACE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
UI = "ui"

UI_SETTINGS: dict[str, ProposalSchema] = {
    "defaultListLayout": compile_schema({"type": "string", "enum": ["table", "cards"],
                                         "description": "How lists of records are shown"}),
    "theme": compile_schema({"type": "string", "enum": ["auto", "light", "dark"],
                             "description": "Colour theme"}),
    "sidebarCollapsed": compile_schema({"type": "boolean", "description": "Hide the chat list beside a chat"}),
}
UI_DEFAULTS = {"defaultListLayout": "table", "theme": "auto", "sidebarCollapsed": False}


class PreferenceError(ValueError):
    """A change that breaks a rule; `fields` names where (`namespace` or `namespace.key`)."""

    def __init__(self, message: str, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.fields = fields or {}


def preferences_of(user: User) -> dict[str, dict[str, Any]]:
    """Return a copy of the user's stored preferences."""
    stored = user.preferences if isinstance(user.preferences, dict) else {}
    return {name: dict(keys) for name, keys in stored.items() if isinstance(keys, dict)}


def ui_setting(user: User, key: str) -> Any:
    """Return one of Skilldesk's own settings, or its default when unset or no longer valid."""
    value = preferences_of(user).get(UI, {}).get(key, UI_DEFAULTS[key])
    return value if UI_SETTINGS[key].is_valid(value) else UI_DEFAULTS[key]


def update_preferences(user: User, patch: Any) -> dict[str, dict[str, Any]]:
    """Merge `{namespace: {key: value}}` into the user's preferences; a null value removes its key.

    The whole patch is checked before anything changes; the caller commits.
    """
    if not isinstance(patch, dict) or not patch:
        raise PreferenceError("Send an object of namespaces, each an object of keys and values.")
    result = preferences_of(user)
    for namespace, changes in patch.items():
        _check_name(namespace, NAMESPACE, "namespace", namespace)
        if not isinstance(changes, dict):
            raise PreferenceError(f"The namespace {namespace} must be an object of keys and values.",
                                  {namespace: "must be an object"})
        keys = result.get(namespace, {})
        for key, value in changes.items():
            where = f"{namespace}.{key}"
            _check_name(key, KEY, "key", where)
            if value is None:
                keys.pop(key, None)
                continue
            _check_value(namespace, key, value, where)
            keys[key] = value
        if keys:
            result[namespace] = keys
        else:
            result.pop(namespace, None)
    _check_totals(result)
    _store(user, result)
    return result


def delete_preferences(user: User, namespace: str, key: str | None = None) -> dict[str, dict[str, Any]]:
    """Remove a key, or a whole namespace when no key is given; the caller commits."""
    result = preferences_of(user)
    if key is None:
        result.pop(namespace, None)
    else:
        result.get(namespace, {}).pop(key, None)
        if not result.get(namespace, True):
            result.pop(namespace)
    _store(user, result)
    return result


def _check_name(name: Any, pattern: re.Pattern[str], kind: str, where: str) -> None:
    if not isinstance(name, str) or not pattern.match(name):
        raise PreferenceError(f"{where!s} is not a valid {kind} name (it must match {pattern.pattern}).",
                              {where: f"invalid {kind} name"})


def _check_value(namespace: str, key: str, value: Any, where: str) -> None:
    size = len(compact_json(value).encode())
    if size > MAX_VALUE_BYTES:
        raise PreferenceError(f"The value of {where} is {size} bytes; the limit is {MAX_VALUE_BYTES}.",
                              {where: "value too large"})
    if namespace != UI:
        return
    schema = UI_SETTINGS.get(key)
    if schema is None:
        raise PreferenceError(f"ui has no setting {key}; it has {', '.join(UI_SETTINGS)}.",
                              {where: "unknown setting"})
    errors = schema.errors(value)
    if errors:
        raise PreferenceError(f"{where}: {errors[0]}.", {where: errors[0]})


def _check_totals(result: dict[str, dict[str, Any]]) -> None:
    if len(result) > MAX_NAMESPACES:
        raise PreferenceError(f"That makes {len(result)} namespaces; the limit is {MAX_NAMESPACES}.")
    for namespace, keys in result.items():
        if len(keys) > MAX_KEYS:
            raise PreferenceError(f"That makes {len(keys)} keys in {namespace}; the limit is {MAX_KEYS}.",
                                  {namespace: "too many keys"})
    total = len(compact_json(result).encode())
    if total > MAX_TOTAL_BYTES:
        raise PreferenceError(f"That makes {total} bytes of preferences; the limit is {MAX_TOTAL_BYTES}.")


def _store(user: User, result: dict[str, dict[str, Any]]) -> None:
    # A new dict, so that SQLAlchemy sees the JSON column change.
    user.preferences = {name: dict(keys) for name, keys in result.items()}
