"""The receipt of a turn: what it changed, written by the server from the turn's ledger, never from the model's words.

Every answer whose turn called a tool that changes stored state, or whose text claims a change, gets a
receipt in its metadata (`meta["receipt"]`):
    {"version": 1,
     "changed": [{"tool", "action", "object", "target", "count", "rows", "ids", "ref", "status", "summary"}, ...],
     "unchanged": [... the calls that changed nothing: failed, no-op, reused ...]}
`summary` is the server's sentence for one entry ("created table Contacts (0 rows)"). The chat shows
the receipt under the answer, the exports and the JSON API carry it, AG-UI sends it as a CUSTOM event;
the next turns read it as the conversation's earlier changes (`earlier_changes`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

VERSION = 1
KEY = "receipt"
CHANGED = ("succeeded", "partial")
PAST = {"create": "created", "update": "updated", "delete": "deleted", "send": "sent", "run": "ran",
        "remember": "saved", "schedule": "scheduled"}
ROW_PAST = {"create": "added", "update": "updated", "delete": "deleted"}
NOTHING = "Nothing was changed in this turn."
STATUS = {"failed": "failed", "no_op": "nothing to change", "reused": "already existed", "partial": "partly"}
MAX_ENTRIES = 50
ENTRY_KEYS = ("tool", "action", "object", "target", "count", "rows", "status")


def entry_of(outcome: dict[str, Any]) -> dict[str, Any]:
    """Return one ledger outcome as a receipt entry, with the server's sentence for it."""
    entry = {key: outcome[key] for key in ENTRY_KEYS if outcome.get(key) is not None}
    ids = next((outcome[k] for k in ("created_row_ids", "updated_row_ids", "deleted_row_ids", "sample_row_ids",
                                      "row_ids", "ids") if isinstance(outcome.get(k), list)), None)
    if ids is None and isinstance(outcome.get("id"), int):
        ids = [outcome["id"]]
    if ids:
        entry["ids"] = ids[:100]
    ref = _ref(outcome)
    if ref:
        entry["ref"] = ref
    entry["summary"] = summary(entry)
    return entry


def _ref(outcome: dict[str, Any]) -> dict[str, Any]:
    """What the changed record is called where the pages can link to it: a table's name, an agent's id."""
    kind = outcome.get("object")
    if kind == "table" and isinstance(outcome.get("name"), str):
        return {"table": outcome["name"]}
    if kind == "row" and isinstance(outcome.get("table"), str):
        return {"table": outcome["table"]}
    if kind in ("agent", "trigger") and isinstance(outcome.get("id"), int):
        return {kind: outcome["id"]}
    return {}


def summary(entry: dict[str, Any]) -> str:
    """Say what one entry did, in the server's words: "added 3 rows to Contacts", "delete rows of Leads: failed"."""
    action, kind, target = entry.get("action"), entry.get("object"), entry.get("target")
    status = entry.get("status", "succeeded")
    done = status in CHANGED
    if not action:
        return f"{entry.get('tool', 'a tool')} ran" if done else f"{entry.get('tool', 'a tool')}: {STATUS[status]}"
    if kind == "row":
        verb = ROW_PAST.get(action, PAST.get(action, action)) if done else {"create": "add"}.get(action, action)
        count = entry.get("count")
        rows = "rows" if count is None or not done else f"{count} row{'s' if count != 1 else ''}"
        preposition = {"create": "to", "update": "of", "delete": "of"}.get(action, "in")
        said = f"{verb} {rows}" + (f" {preposition} {target}" if target else "")
    else:
        verb = PAST.get(action, action) if done else action
        said = f"{verb} {kind or 'something'}" + (f" {target}" if target else "")
        if done and kind == "table" and action == "create":
            rows = entry.get("rows", 0)
            said += f" ({rows} row{'s' if rows != 1 else ''})"
    if status == "partial":
        return said + " (partly)"
    return said if done else f"{said}: {STATUS.get(status, status)}"


def receipt_of(changes: Iterable[dict[str, Any]], claims_change: bool) -> dict[str, Any] | None:
    """Return the receipt of a turn's changes; None when nothing was attempted and nothing is claimed."""
    entries = [entry_of(outcome) for outcome in changes][-MAX_ENTRIES:]
    changed = [entry for entry in entries if entry.get("status") in CHANGED]
    unchanged = [entry for entry in entries if entry.get("status") not in CHANGED]
    if not entries and not claims_change:
        return None
    return {"version": VERSION, "changed": changed, "unchanged": unchanged}


def headline(receipt: dict[str, Any]) -> str:
    """The receipt in one line: "Changed in this turn: created table Contacts (0 rows)" or NOTHING."""
    changed = [entry["summary"] for entry in receipt.get("changed") or []]
    if not changed:
        return NOTHING
    return "Changed in this turn: " + "; ".join(changed)


def read(meta: Any) -> dict[str, Any] | None:
    """Return the receipt stored in a message's metadata, if it is one of this version."""
    receipt = meta.get(KEY) if isinstance(meta, dict) else None
    if isinstance(receipt, dict) and receipt.get("version") == VERSION:
        return receipt
    return None


def earlier_changes(metas: Iterable[Any]) -> list[dict[str, Any]]:
    """Return the changes earlier answers' receipts list, oldest first (the metas come oldest first)."""
    found: list[dict[str, Any]] = []
    for meta in metas:
        receipt = read(meta)
        if receipt is not None:
            found.extend(entry for entry in receipt.get("changed") or [] if isinstance(entry, dict))
    return found[-MAX_ENTRIES:]
