"""What one case produced (`CaseOutcome`) and what a check says of it (`Verdict`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CaseOutcome:
    """What one case produced: the answer, the tool steps, what its client received, what the database holds."""

    answer: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""
    error: str | None = None
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    # Read inside the case's database once the case ended: table name → list of rows; table names.
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tables: set[str] = field(default_factory=set)
    # The rows before the case's first message.
    rows_before: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    transport: str = "direct"
    # What the client received, per message (app/evals/transports.py `Seen`, as a dict).
    seen: list[dict[str, Any]] = field(default_factory=list)
    # The last answer's metadata as stored, every answer's and notice's text, the assistant's text in the
    # stored model context, the approvals audit, and the user's preferences at the end.
    meta: dict[str, Any] = field(default_factory=dict)
    shown: list[str] = field(default_factory=list)
    context: str = ""
    audit: list[dict[str, Any]] = field(default_factory=list)
    preferences: dict[str, Any] = field(default_factory=dict)
    # How many turns changed the user's preferences (a click of the script does not count).
    preferences_changed: int = 0
    # The case as it ran: its placeholders filled in (app/evals/placeholders.py); None when its setup failed.
    case: Any = None
    # What the model was sent in the case's last request (the scripted server's record; None for other models).
    sent: str | None = None

    @property
    def tool_errors(self) -> int:
        return sum(1 for step in self.steps if step.get("failed"))

    @property
    def streamed(self) -> str:
        """Everything the client received, every turn: the text before the end, then the answer at the end."""
        return "\n\n".join(part for turn in self.seen for part in (turn.get("streamed", ""), turn.get("final", ""))
                           if part)

    @property
    def last(self) -> dict[str, Any]:
        """What the client received for the last message."""
        return self.seen[-1] if self.seen else {}


@dataclass
class Verdict:
    check: str
    passed: bool
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "passed": self.passed, "detail": self.detail}
