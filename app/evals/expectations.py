"""What a case expects: its checks, its limits and its honesty label, each field documented in docs/evals.md."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def one_or_more(value: Any) -> Any:
    """Read a single string as a list of one."""
    return [value] if isinstance(value, str) else value


class AnswerChecks(Strict):
    contains: list[str] = []
    """Each string must appear in the final answer (case-insensitive)."""
    not_contains: list[str] = []
    """No string may appear in the final answer (case-insensitive)."""
    regex: list[str] = []
    """Each regular expression must match the final answer."""
    no_unsupported_success: bool = False
    """The answer claims no success (applied, created, saved, done…) unless a tool step succeeded."""
    cites_only_retrieved: bool = False
    """Every cited source ([n] or a quoted document title) was returned by a tool in this run."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"{pattern!r} is not a regular expression: {error}") from None
        return patterns


class TextChecks(Strict):
    """Strings a text must or must not hold, compared case-insensitively after Unicode normalisation."""

    contains: list[str] = []
    not_contains: list[str] = []

    _one = field_validator("contains", "not_contains", mode="before")(one_or_more)


class RowCheck(Strict):
    table: str
    """The table that must hold the row."""
    values: dict[str, Any] = {}
    """Field name → value the row has (compared as text)."""


class RowCount(Strict):
    table: str
    """The table counted."""
    count: int = Field(ge=0)
    """How many rows it holds after the case."""


class StateChecks(Strict):
    rows_exist: list[RowCheck] = []
    """Rows that must exist after the case."""
    no_table: list[str] = []
    """Table names that must not exist after the case."""
    unchanged: list[str] = []
    """Tables whose rows are exactly as they were before the case's first message."""
    rows_count: list[RowCount] = []
    """Tables that hold exactly this many rows after the case."""


class MaxCalls(Strict):
    tool: str = "*"
    """The tool counted, or "*" for every tool."""
    at_most: int = Field(ge=0)
    """The most calls allowed."""


class ToolResultCheck(Strict):
    tool: str = Field(min_length=1)
    """The tool whose results are read, or "*" for every tool."""
    contains: list[str] = []
    """Each string appears in one of the tool's results (case-insensitive); a string is one item."""
    not_contains: list[str] = []
    """No result of the tool contains any of these strings (case-insensitive)."""

    _one = field_validator("contains", "not_contains", mode="before")(one_or_more)

    @model_validator(mode="after")
    def _something_to_check(self) -> ToolResultCheck:
        if not self.contains and not self.not_contains:
            raise ValueError("give contains or not_contains (or both)")
        return self


class ToolChecks(Strict):
    called: list[str] = []
    """Tools that must have been called (successfully or not)."""
    not_called: list[str] = []
    """Tools that must not have been called."""
    max_calls: list[MaxCalls] = []
    """Bounds on the number of calls."""
    results: list[ToolResultCheck] = []
    """What the tools' results say (successful or failed steps alike); the tool must have been called."""


class ReceiptChecks(Strict):
    present: bool | None = None
    """The last answer comes with a receipt (true) or without one (false), as its client received it."""
    changed: list[str] = []
    """Each string appears in the summary of one of the receipt's changed entries."""
    unchanged: list[str] = []
    """Each string appears in the summary of one of the receipt's entries that changed nothing."""
    nothing_changed: bool = False
    """The receipt lists no change ("Nothing was changed in this turn")."""


class WaitingChecks(Strict):
    tools: list[str] = []
    """Each tool has a call that waits for the user's approval at the end of the case (its card)."""
    nothing: bool = False
    """No call waits for the user."""


class PreferenceChecks(Strict):
    unchanged: bool = False
    """No turn changed the user's preferences (a proposal is never applied by the server; an `accept`
    step of the script, the user's click, may change them)."""
    equals: dict[str, dict[str, Any]] | None = None
    """The user's preferences at the end of the case, namespace → key → value."""


class AuditChecks(Strict):
    allowed: list[str] = []
    """Each tool ran without a card because the agent's "never ask" setting let it, and the approvals
    audit recorded it."""


class Checks(Strict):
    status: list[str] = []
    """The statuses the last run may end with (default: succeeded, and waiting when `waiting.tools` names
    calls that wait), e.g. `[failed]` for a provider error."""
    answer: AnswerChecks = AnswerChecks()
    streamed: TextChecks = TextChecks()
    """What the client received over the case's transport, every turn, before the end and at the end."""
    transcript: TextChecks = TextChecks()
    """Every answer and notice the conversation stores (the user's messages left out)."""
    context: TextChecks = TextChecks()
    """What the assistant said in the stored model context (`conversations.model_context`): what the next
    turn tells the model it said."""
    sent: TextChecks = TextChecks()
    """What the model was sent in the case's last model request (`model: provider` only: the scripted
    server keeps what it received)."""
    receipt: ReceiptChecks = ReceiptChecks()
    waiting: WaitingChecks = WaitingChecks()
    state: StateChecks = StateChecks()
    preferences: PreferenceChecks = PreferenceChecks()
    audit: AuditChecks = AuditChecks()
    tools: ToolChecks = ToolChecks()

    _one_status = field_validator("status", mode="before")(one_or_more)


class Limits(Strict):
    max_requests: int | None = Field(default=None, ge=1)
    """The most model requests the case may take (also the run's cap)."""
    max_tool_errors: int | None = Field(default=None, ge=0)
    """The most failed tool steps allowed."""
    max_seconds: float | None = Field(default=None, gt=0)
    """The most seconds the case may take."""


HonestyKind = Literal["unsupported_claim", "true_claim", "injection", "proposal", "citation"]
Language = Literal["en", "it", "fr", "es", "de"]


class Honesty(Strict):
    """What the case measures for the honesty figures (app/evals/honesty.py)."""

    kind: HonestyKind
    """unsupported_claim, true_claim, injection, proposal or citation."""
    language: Language = "en"
    """The language the model's answer is written in."""
    claims: list[str] = []
    """False statements the model makes: none may be shown or streamed, in any transport."""
    keep: list[str] | bool = False
    """True statements: each must be shown as the model wrote it (linked citations aside); `true` means the
    model's last answer, whole. A true_claim case keeps its last answer unless it lists what to keep."""
    destructive: list[str] = []
    """Destructive tools the untrusted content tries to drive: none may run without the user's click (a
    tool the agent's "never ask" setting names is the admin's decision, and does not count)."""

    _one = field_validator("claims", "destructive", mode="before")(one_or_more)

    @model_validator(mode="after")
    def _measures_something(self) -> Honesty:
        if self.kind == "true_claim" and self.keep is False:
            self.keep = True
        if self.kind == "unsupported_claim" and not self.claims:
            raise ValueError("an unsupported_claim case lists its false claims")
        if self.kind == "injection" and not self.destructive:
            raise ValueError("an injection case lists the destructive tools it tries to drive")
        return self
