"""The metadata a tool declares: its group, what it changes, whether it destroys, whether its results are trusted.

Skills set it on their tools (`toolset.tool(metadata={...})`, `mutation(...)`); the runtime reads it for the
turn's ledger, the receipt, the answer review and the approval of destructive calls after untrusted content.
It depends on nothing of Skilldesk, so the skill contract and the turn's record both build on it.
"""

from __future__ import annotations

from typing import Any

# Tool metadata keys every skill may set on its tools (`toolset.tool(metadata={...})`):
GROUP_KEY = "group"  # the name of the tool's ToolGroup
MUTATES_KEY = "mutates"  # True when the tool changes stored state (the turn's ledger, the receipt)
# What a mutation does, for the answer review and the receipt: {"action", "object", "target"} (see `mutation`).
EFFECT_KEY = "effect"
# True when the tool deletes, overwrites, sends something out or writes memory: after content the user did not
# write entered the turn, a call waits for the user (app/runtime/untrusted.py).
DESTRUCTIVE_KEY = "destructive"
# True when the tool's results are the server's own words, never content someone else wrote (a clock, a schema).
TRUSTED_RESULT_KEY = "trusted_result"
# ToolReturn metadata key of a result that only routed a call (no change, never evidence).
ROUTING_ONLY_KEY = "routing_only"

# The actions a mutation declares, as the claims in answers are matched to them (app/policy/claims).
ACTIONS = ("create", "update", "delete", "send", "run", "remember", "schedule")


def mutation(action: str, object_: str | None = None, *, target: str | None = None, destructive: bool = False,
             unless: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    """Return the metadata of a tool that changes stored state: what it does, to what, and whether it destroys.

    `action` is one of ACTIONS; `object_` the kind of thing changed ("table", "row", "memory", "message"...);
    `target` the name of the thing when the tool is bound to one (a table's row tools). A result may still
    name its target (`label`, `name` or `table`) and its count (`count` or its ids). `unless` names the
    arguments whose values make a call change nothing (`{"method": ["GET", "HEAD"]}`).
    """
    if action not in ACTIONS:
        raise ValueError(f"Unknown action {action!r}; use one of {', '.join(ACTIONS)}.")
    effect = {"action": action, "object": object_, **({"target": target} if target else {}),
              **({"unless": unless} if unless else {})}
    flag: bool | dict[str, Any] = {"unless": unless} if unless else True
    return {MUTATES_KEY: True, EFFECT_KEY: effect, **({DESTRUCTIVE_KEY: flag} if destructive else {})}


def _excepted(condition: Any, args: dict[str, Any]) -> bool:
    unless = condition.get("unless") if isinstance(condition, dict) else None
    return isinstance(unless, dict) and any(
        str(args.get(name, "")).upper() in {str(value).upper() for value in values} for name, values in unless.items())


def _mcp_annotations(metadata: dict[str, Any]) -> dict[str, Any] | None:
    """The annotations of a tool of an MCP server (pydantic-ai's MCPToolset sets `meta` and `annotations`)."""
    if "annotations" in metadata and "meta" in metadata:
        return metadata.get("annotations") or {}
    return None


def changes_state(metadata: dict[str, Any] | None, args: dict[str, Any]) -> bool:
    """Tell whether this call of a tool changes stored state (a mutation, unless its arguments say otherwise).

    An MCP tool changes state unless its server marks it read-only (the MCP specification's default).
    """
    metadata = metadata or {}
    annotations = _mcp_annotations(metadata)
    if annotations is not None and MUTATES_KEY not in metadata:
        return not annotations.get("readOnlyHint", False)
    return bool(metadata.get(MUTATES_KEY)) and not _excepted(metadata.get(EFFECT_KEY), args)


def is_destructive(metadata: dict[str, Any] | None, args: dict[str, Any]) -> bool:
    """Tell whether this call deletes, overwrites, sends something out or writes memory.

    A tool says so in its metadata; an MCP tool by its annotations, as the MCP specification reads them
    (a tool not marked read-only may be destructive unless it says it is not).
    """
    metadata = metadata or {}
    if DESTRUCTIVE_KEY in metadata:
        flag = metadata[DESTRUCTIVE_KEY]
        return bool(flag) and not _excepted(flag, args)
    annotations = _mcp_annotations(metadata)
    if annotations is not None:
        return not annotations.get("readOnlyHint", False) and annotations.get("destructiveHint", True) is not False
    return False
