"""What a mutation did, in a bounded, value-free form: for action memory and for the answer checks.

A tool is a mutation when its metadata says so (`mutates: True`, see app/runtime/skill.py), never
by its name. A result that only routed a call (`routing_only`) is no outcome. An outcome keeps the
tool's name, a status (succeeded, partial, no_op, reused, failed), the SHA-256 fingerprint of the
full arguments, and from a structured result only ids, counts, flags and short names: never cell
values, never the arguments themselves. A tool can state its outcome apart from what the model
reads with `ToolReturn(text, metadata={"outcome": {...}})`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai import ToolReturn
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart

from app.runtime.tool_metadata import MUTATES_KEY, ROUTING_ONLY_KEY

VERSION = 1
MAX_OUTCOMES = 12
MAX_CHARS = 4_000
MAX_STRING = 160
MAX_OUTCOME_CHARS = MAX_CHARS // 4  # one outcome above this keeps only its status flags
FLAGS = ("tool", "status", "changed", "partial", "reused", "amended")
ID_KEYS = ("id", "ids", "row_ids", "record_ids", "created_row_ids", "updated_row_ids", "deleted_row_ids",
           "sample_row_ids")
COUNT_KEYS = ("count", "created", "updated", "deleted", "skipped", "total")
NAME_KEYS = ("name", "label", "table", "kind", "reason", "unfinished", "error")
# Where a target's name is read from, in order: the tool's declared effect, its result, its arguments.
TARGET_KEYS = ("label", "name", "table", "title")
ROW_ID_KEYS = ("created_row_ids", "updated_row_ids", "deleted_row_ids", "row_ids", "record_ids", "ids")


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def fingerprint(tool: str, args: Any) -> str:
    """SHA-256 of the tool's name and its full arguments: two requests that differ anywhere differ here."""
    return hashlib.sha256(compact({"tool": tool, "args": args}).encode()).hexdigest()


def is_mutation(tool_def: Any) -> bool:
    return bool((getattr(tool_def, "metadata", None) or {}).get(MUTATES_KEY))


def routing_only(result: Any) -> bool:
    metadata = result.metadata if isinstance(result, ToolReturn | ToolReturnPart) else None
    return bool((metadata or {}).get(ROUTING_ONLY_KEY))


def cut(text: Any) -> str:
    text = str(text)
    return text if len(text) <= MAX_STRING else text[: MAX_STRING - 1] + "…"


def _ids(value: Any) -> Any:
    if isinstance(value, list):
        return [item if isinstance(item, int) else cut(item) for item in value if isinstance(item, int | str)]
    return value if isinstance(value, int) else cut(value)


def outcome_of(tool: str, args: Any, result: Any = None, error: BaseException | None = None) -> dict[str, Any]:
    """Return the bounded outcome of one mutation call (its result, or the error it raised)."""
    outcome: dict[str, Any] = {"tool": cut(tool), "status": "succeeded", "changed": True,
                               "fingerprint": fingerprint(tool, args)}
    if error is not None:
        outcome.update(status="failed", changed=False, error=cut(f"{type(error).__name__}: {error}"))
        return outcome
    stated = result.metadata.get("outcome") if isinstance(result, ToolReturn) and result.metadata else None
    value = stated if isinstance(stated, dict) else result.return_value if isinstance(result, ToolReturn) else result
    if not isinstance(value, dict):
        return outcome  # a text result: its status only, none of its text
    for key in ID_KEYS:
        if key in value and value[key] is not None:
            outcome[key] = _ids(value[key])
    for key in COUNT_KEYS:
        if isinstance(value.get(key), int) and not isinstance(value.get(key), bool):
            outcome[key] = value[key]
    for key in NAME_KEYS:
        if isinstance(value.get(key), str):
            outcome[key] = cut(value[key])
    if value.get("reused") is True and value.get("changed") is True:
        outcome.update(reused=True, amended=True)  # an existing resource, changed (fields added to it)
    elif value.get("reused") is True:
        outcome.update(status="reused", changed=False, reused=True)
    elif value.get("changed") is False:
        outcome.update(status="no_op", changed=False)
    if value.get("partial") is True:
        outcome.update(status="partial", partial=True)
    return outcome


def with_effect(outcome: dict[str, Any], effect: dict[str, Any], args: Any = None) -> dict[str, Any]:
    """Add what the tool declared it does (action, object) and what it did it to (target, count) to an outcome.

    The target is the effect's own (a table's row tools are bound to their table), else the name the result
    gives, else the one the arguments give; the count is the result's, else the number of ids it lists
    (rows a table was created with count as its rows: a new table without them has 0).
    """
    if not effect:
        return outcome
    # Creating what already existed and changing it is an update of it.
    action = "update" if outcome.get("amended") and effect.get("action") == "create" else effect.get("action")
    outcome = {**outcome, "action": action, "object": effect.get("object")}
    arguments = args if isinstance(args, dict) else {}
    target = effect.get("target") or next((outcome[k] for k in TARGET_KEYS if isinstance(outcome.get(k), str)), None) \
        or next((arguments[k] for k in TARGET_KEYS if isinstance(arguments.get(k), str)), None)
    if target:
        outcome["target"] = cut(target)
    if "count" not in outcome:
        ids = next((outcome[k] for k in ROW_ID_KEYS if isinstance(outcome.get(k), list)), None)
        if ids is not None and effect.get("object") == "row":
            outcome["count"] = len(ids)
    if effect.get("object") == "table" and effect.get("action") == "create":
        outcome["rows"] = len(outcome.get("sample_row_ids") or [])
    return outcome


def bounded(outcomes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the newest outcomes within MAX_OUTCOMES and MAX_CHARS of compact JSON, oldest evicted first."""
    kept = [outcome if len(compact(outcome)) <= MAX_OUTCOME_CHARS
            else {**{key: outcome[key] for key in FLAGS if key in outcome}, "oversized": True}
            for outcome in outcomes if isinstance(outcome, dict)]
    kept = kept[-MAX_OUTCOMES:]
    while kept and len(compact(ledger(kept))) > MAX_CHARS:
        kept.pop(0)
    return kept


def ledger(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": VERSION, "outcomes": outcomes}


def read_ledger(meta: Any) -> list[dict[str, Any]]:
    """Return the outcomes of a stored ledger; anything else (an old message, another version) gives none."""
    stored = meta.get("action_memory") if isinstance(meta, dict) else None
    if not isinstance(stored, dict) or stored.get("version") != VERSION or not isinstance(stored.get("outcomes"), list):
        return []
    return bounded(outcome for outcome in stored["outcomes"] if isinstance(outcome, dict) and "tool" in outcome)


def since_latest_prompt(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """Return the messages after the latest user prompt (the live part of the current user turn)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts):
            return list(messages[index + 1:])
    return list(messages)


def live_outcomes(messages: Sequence[ModelMessage], mutations: set[str]) -> list[dict[str, Any]]:
    """Return the outcomes of the mutation results after the latest user prompt (routing-only ones left out)."""
    found = []
    for message in since_latest_prompt(messages):
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name in mutations and not routing_only(part):
                if getattr(part, "outcome", "success") == "success":
                    found.append(outcome_of(part.tool_name, None, ToolReturn(part.content, metadata=part.metadata)))
                else:
                    found.append({"tool": part.tool_name, "status": "failed", "changed": False})
    return found
