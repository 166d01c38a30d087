"""The record of one turn: what its tools did, what it changed, proposed and retrieved, and what came from outside.

One `TurnRecord` per run, made by the builder and handed to the skills (`SkillContext.record`). The
runtime's `TurnLog` capability writes the tool calls, the changes (the turn's ledger: each call of a
tool whose metadata says `mutates`, as a bounded outcome, app/runtime/evidence.py) and the untrusted
content that entered the turn; skills add what they own (the knowledge skill its retrieved passages,
the UI proposals skill its proposals). The answer review (app/runtime/review.py) gives the record to
every reviewer, the receipt is rendered from its changes, and nothing in it comes from the model's
words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import ModelRetry, ToolReturn
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, SkipToolExecution, ToolFailed

from app.policy.claims import Change, Finding, Suggestion, change_from_outcome, check_claims
from app.runtime import evidence
from app.runtime.tool_metadata import EFFECT_KEY, TRUSTED_RESULT_KEY, changes_state

TEXT_CHARS = 4_000
# Tools pydantic-ai itself provides whose results list the agent's own tools (the tool search).
SERVER_KINDS = frozenset({"tool-search"})


@dataclass
class ToolCall:
    """One call of this turn and what came back (text clipped), or that it failed."""

    id: str
    name: str
    args: dict[str, Any]
    result: str = ""
    failed: bool = False
    mutates: bool = False


@dataclass
class Passage:
    """A passage retrieved in this turn, under the number the model was given for it."""

    number: int
    passage_id: int
    document_id: int
    title: str
    heading: str
    text: str = ""


@dataclass
class TurnRecord:
    """What one run did, as the runtime and the skills observed it (never as the model described it)."""

    locale: str | None = None
    # Every tool the model was offered in this run, by name, with its metadata.
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[ToolCall] = field(default_factory=list)
    # The outcomes of this turn's mutation calls (evidence.outcome_of), in call order: the ledger.
    changes: list[dict[str, Any]] = field(default_factory=list)
    # The changes earlier turns of the conversation stored with their answers (their receipts), oldest first.
    earlier: list[dict[str, Any]] = field(default_factory=list)
    # Proposals stored this turn (the UI proposals skill), as the message's metadata keeps them.
    proposals: list[dict[str, Any]] = field(default_factory=list)
    # Passages retrieved this turn by number (the knowledge skill), and what was searched in which bases.
    passages: dict[int, Passage] = field(default_factory=dict)
    searches: list[str] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)
    # Tools whose results brought content the user did not write into this turn (app/runtime/untrusted.py).
    untrusted: list[str] = field(default_factory=list)
    # How many times the answer review asked the model again, and which reviewers asked.
    asked: list[str] = field(default_factory=list)
    # The model asked about what the deterministic checks cannot decide (app/runtime/verifier.py), if configured.
    verifier: Any = None
    _findings: tuple[str, list[Finding]] | None = field(default=None, repr=False)

    def passage_number(self, passage_id: int, document_id: int, title: str, heading: str, text: str = "") -> int:
        """Return the number of a retrieved passage, giving it the next number the first time."""
        for passage in self.passages.values():
            if passage.passage_id == passage_id:
                return passage.number
        number = len(self.passages) + 1
        self.passages[number] = Passage(number, passage_id, document_id, title, heading, text)
        return number

    def failed_calls(self) -> list[ToolCall]:
        return [call for call in self.calls if call.failed]

    def findings(self, text: str) -> list[Finding]:
        """Check every claim of `text` against this turn's changes, earlier receipts and proposals (the engine of
        app/policy/claims); the same text is checked once, whichever reviewers ask."""
        if self._findings is None or self._findings[0] != text:
            changes = [change_of(o) for o in self.changes] + [change_of(o, earlier=True) for o in self.earlier]
            found = check_claims(text, changes, [suggestion_of(p) for p in self.proposals], self.locale,
                                 tools=set(self.tools), calls=[call.name for call in self.calls])
            self._findings = (text, found)
        return self._findings[1]


def change_of(outcome: Mapping[str, Any], earlier: bool = False) -> Change:
    """A ledger entry for the claims engine: the action and kind the tool declared, else what its name says."""
    named = change_from_outcome(outcome, earlier)
    action = outcome.get("action") or named.action
    kind = outcome.get("object") or named.object
    count = named.count
    if kind == "table" and action == "create" and isinstance(outcome.get("rows"), int):
        count = outcome["rows"]  # a table made with sample rows wrote that many rows
    target = outcome.get("target") if isinstance(outcome.get("target"), str) else named.target
    return Change(named.tool, action, kind, target, count, named.status, earlier)


def suggestion_of(proposal: Mapping[str, Any]) -> Suggestion:
    """A stored proposal as the claims engine reads it."""
    target = proposal.get("target") or {}
    name = ".".join(str(value) for value in target.values()) if isinstance(target, Mapping) else str(target)
    return Suggestion(str(proposal.get("kind") or "preference"), name, proposal.get("proposed"))


# The action an MCP tool's name begins with, for tools whose server declares no effect (a write tool's name
# says what it does far more often than not; a tool of no known verb "ran").
NAME_VERBS = {"create": "create", "add": "create", "insert": "create", "new": "create", "update": "update",
              "set": "update", "edit": "update", "rename": "update", "move": "update", "delete": "delete",
              "remove": "delete", "drop": "delete", "send": "send", "post": "send", "notify": "send"}


def effect_of(metadata: dict[str, Any] | None, name: str = "") -> dict[str, Any]:
    """Return a tool's declared effect (`{"action": ..., "object": ...}`), or an empty dict.

    A tool of an MCP server that may change state declares none: its name's first word gives the action.
    """
    effect = (metadata or {}).get(EFFECT_KEY)
    if isinstance(effect, dict):
        return dict(effect)
    if "annotations" in (metadata or {}) and "meta" in (metadata or {}):
        words = name.lower().replace("-", "_").split("_")
        # The server's prefix (the skill's name for it) may come first: "notes_add_note".
        at = next((i for i, word in enumerate(words[:2]) if word in NAME_VERBS), None)
        if at is None:
            return {"action": "run", "object": None}
        return {"action": NAME_VERBS[words[at]], "object": "_".join(words[at + 1:]) or None}
    return {}


def trusted_result(metadata: dict[str, Any] | None) -> bool:
    """Tell whether a tool's results are the server's own words (never content someone else wrote)."""
    return bool((metadata or {}).get(TRUSTED_RESULT_KEY))


@dataclass
class TurnLog(AbstractCapability[Any]):
    """Write every tool call of the run, and the outcome of every mutation, into the turn's record."""

    record: TurnRecord

    async def prepare_tools(self, ctx, tool_defs):
        for tool_def in tool_defs:
            metadata = dict(tool_def.metadata or {})
            if getattr(tool_def.tool_kind, "name", None) in SERVER_KINDS:
                metadata[TRUSTED_RESULT_KEY] = True  # pydantic-ai's own tools answer in the server's words
            self.record.tools[tool_def.name] = metadata
        return tool_defs

    async def wrap_tool_execute(self, ctx, *, call, tool_def, args, handler):
        try:
            result = await handler(args)
        except (ApprovalRequired, CallDeferred, SkipToolExecution):
            raise  # not run: it waits for a person, or was skipped
        except (ModelRetry, ToolFailed, Exception) as error:  # noqa: B014 - the three ways a call fails
            self._log(call, tool_def, args, error=error)
            raise
        self._log(call, tool_def, args, result=result)
        return result

    def _log(self, call, tool_def, args, result: Any = None, error: BaseException | None = None) -> None:
        arguments = args if isinstance(args, dict) else {}
        mutates = changes_state(tool_def.metadata, arguments)
        text = str(error) if error is not None else _text(result)
        self.record.calls.append(ToolCall(call.tool_call_id, call.tool_name, arguments, text[:TEXT_CHARS],
                                          failed=error is not None, mutates=mutates))
        if mutates and (error is not None or not evidence.routing_only(result)):
            outcome = evidence.outcome_of(call.tool_name, arguments, result, error)
            effect = effect_of(tool_def.metadata, call.tool_name)
            self.record.changes.append(evidence.with_effect(outcome, effect, arguments))


def _text(result: Any) -> str:
    value = result.return_value if isinstance(result, ToolReturn) else result
    return value if isinstance(value, str) else evidence.compact(value)
