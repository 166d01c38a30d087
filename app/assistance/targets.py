"""Proposable targets: what a page is willing to have the assistant propose (`context.page.proposable`).

Each entry is untrusted input, checked against its bounds; an entry that fails any of them is
dropped, never repaired:
- at most 30 entries (later ones are dropped), one per target (a repeated target is dropped);
- `kind` is `preference` (target: `namespace`, `key`) or `view_state` (target: `resource` as
  `data/<table>` naming a table the user may read, and `view`); no other key in the entry or target;
- names that match their patterns; for the `ui` namespace, one of Skilldesk's own settings;
- `schema` in the proposal subset (app/policy/schema_subset.py: at most 2000 bytes and 4 levels);
- `current` of at most 500 bytes of compact JSON;
- `description` of at most 120 characters on one line, with no control character.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from app.assistance.preferences import KEY, NAMESPACE, UI, UI_SETTINGS
from app.policy.proposals import KINDS
from app.policy.schema_subset import NotProposable, ProposalSchema, compact_json, compile_schema
from app.tables.context import RESOURCE
from app.tables.permissions import allowed
from app.tables.schema import get_table

MAX_TARGETS = 30
MAX_CURRENT_BYTES = 500
MAX_DESCRIPTION = 120
VIEW = re.compile(r"^[a-z][A-Za-z0-9_.-]{0,63}$")
ENTRY_KEYS = {"kind", "target", "schema", "current", "description"}


@dataclass(frozen=True)
class ProposableTarget:
    """One declared target that passed every bound."""

    kind: str
    target: dict[str, str]
    schema: ProposalSchema
    current: Any
    description: str

    @property
    def key(self) -> tuple[str, ...]:
        return (self.kind, *(self.target[name] for name in KINDS[self.kind]))

    def as_json(self) -> dict[str, Any]:
        """Return the entry as it is kept with the message (for the proposal tools)."""
        return {"kind": self.kind, "target": dict(self.target), "schema": self.schema.schema,
                "current": self.current, "description": self.description}


@dataclass(frozen=True)
class Declared:
    """The targets kept, and why each dropped entry was dropped (by its position in the list)."""

    targets: tuple[ProposableTarget, ...] = ()
    dropped: tuple[tuple[int, str], ...] = ()

    def of_kind(self, kind: str) -> tuple[ProposableTarget, ...]:
        """Return the targets of one kind."""
        return tuple(t for t in self.targets if t.kind == kind)


class Dropped(ValueError):
    """An entry that breaks a bound; the message says which."""


def declared_targets(entries: Any, role: str | None) -> Declared:
    """Check a page's proposable list for a user's role; keep what passes, drop the rest."""
    if not isinstance(entries, list):
        return Declared(dropped=((0, "proposable must be a list"),) if entries is not None else ())
    kept: list[ProposableTarget] = []
    dropped: list[tuple[int, str]] = []
    seen: set[tuple[str, ...]] = set()
    readable: dict[str, bool] = {}
    for index, entry in enumerate(entries):
        if index >= MAX_TARGETS:
            dropped.append((index, f"more than {MAX_TARGETS} entries"))
            continue
        try:
            target = _check_entry(entry, role, readable)
            if target.key in seen:
                raise Dropped("the same target is declared twice")
        except Dropped as error:
            dropped.append((index, str(error)))
            continue
        seen.add(target.key)
        kept.append(target)
    return Declared(tuple(kept), tuple(dropped))


def _check_entry(entry: Any, role: str | None, readable: dict[str, bool]) -> ProposableTarget:
    if not isinstance(entry, dict):
        raise Dropped("an entry must be an object")
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise Dropped(f"unknown keys {', '.join(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise Dropped("kind must be preference or view_state")
    target = _check_target(kind, entry.get("target"), role, readable)
    if "schema" not in entry:
        raise Dropped("a schema is required")
    try:
        schema = compile_schema(entry["schema"])
    except NotProposable as error:
        raise Dropped(str(error)) from None
    current = entry.get("current")
    try:
        size = len(compact_json(current).encode())
    except (TypeError, ValueError):
        raise Dropped("current is not JSON data") from None
    if size > MAX_CURRENT_BYTES:
        raise Dropped(f"current is {size} bytes; the limit is {MAX_CURRENT_BYTES}")
    return ProposableTarget(kind, target, schema, current, _check_description(entry.get("description", "")))


def _check_target(kind: str, target: Any, role: str | None, readable: dict[str, bool]) -> dict[str, str]:
    names = KINDS[kind]
    if not isinstance(target, dict) or set(target) != set(names):
        raise Dropped(f"a {kind} target has exactly {' and '.join(names)}")
    if not all(isinstance(target[name], str) for name in names):
        raise Dropped("target names must be strings")
    if kind == "preference":
        namespace, key = target["namespace"], target["key"]
        if not NAMESPACE.match(namespace) or not KEY.match(key):
            raise Dropped("the namespace or key does not match its pattern")
        if namespace == UI and key not in UI_SETTINGS:
            raise Dropped(f"ui has no setting {key}")
    else:
        resource, view = target["resource"], target["view"]
        match = RESOURCE.match(resource)
        if match is None or not VIEW.match(view):
            raise Dropped("the resource or view does not match its pattern")
        if resource not in readable:
            table = get_table(match.group(1))
            readable[resource] = table is not None and allowed(table, role, "read")
        if not readable[resource]:
            raise Dropped("the resource is not a table the user may read")
    return {name: target[name] for name in names}


def _check_description(description: Any) -> str:
    if not isinstance(description, str):
        raise Dropped("description must be a string")
    if len(description) > MAX_DESCRIPTION:
        raise Dropped(f"description is {len(description)} characters; the limit is {MAX_DESCRIPTION}")
    if any(unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") for char in description):
        raise Dropped("description must be one line of plain text")
    return description
