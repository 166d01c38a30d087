"""The receipt under an answer, as the chat's templates show it: one line that opens to what changed.

The receipt is written by the server from the turn's ledger (app/runtime/receipt.py); here each entry
gets links to the records it changed, where the pages can show them (those pages check access again).
"""

from __future__ import annotations

from typing import Any

from flask import url_for

from app.runtime import receipt

ROW_LINKS = 5


def receipt_for(message: Any) -> dict[str, Any] | None:
    """Return the receipt an answer's metadata holds, or None."""
    return receipt.read(getattr(message, "meta", None))


def receipt_headline(found: dict[str, Any]) -> str:
    """Say in one line what the turn changed, or that it changed nothing."""
    return receipt.headline(found)


def receipt_links(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """Return (label, address) of the records an entry changed: the table, its rows, the agent, the trigger."""
    ref = entry.get("ref") if isinstance(entry.get("ref"), dict) else {}
    if isinstance(ref.get("agent"), int):
        return [("open the agent", url_for("agents.edit", agent_id=ref["agent"]))]
    if isinstance(ref.get("trigger"), int):
        return [("open the trigger", url_for("triggers_admin.show", trigger_id=ref["trigger"]))]
    table = ref.get("table")
    if not isinstance(table, str) or not table:
        return []
    links = [("open the table", url_for("data.index", name=table))]
    if entry.get("object") == "row" and entry.get("action") != "delete":
        links += [(f"row {row_id}", url_for("data.show", name=table, row_id=row_id))
                  for row_id in (entry.get("ids") or [])[:ROW_LINKS] if isinstance(row_id, int)]
    return links
