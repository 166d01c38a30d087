"""The records of the claims engine: a ledger change, a proposal card, a claim found in an answer, a verdict."""

from __future__ import annotations

from dataclasses import dataclass

SUPPORTED = "supported"
SUPPORTED_PAST = "supported_past"
UNSUPPORTED = "unsupported"
UNDECIDED = "undecided"
VERDICTS = (SUPPORTED, SUPPORTED_PAST, UNSUPPORTED, UNDECIDED)
STATUSES = ("succeeded", "partial", "no_op", "reused", "failed")
PLACES = {"send": "to", "delete": "from"}
DONE = {None: "changed", "create": "created", "update": "updated", "delete": "deleted", "send": "sent",
        "schedule": "scheduled", "run": "run", "remember": "remembered", "suggest": "suggested"}


@dataclass(frozen=True)
class Change:
    """One ledger entry, as the runtime records it from a mutating tool's result."""

    tool: str
    """The tool's name, e.g. "create_table", "create_rows_in_table_5"."""
    action: str
    """Canonical action: create, update, delete, send, schedule, run, remember (kinds.toml `actions`)."""
    object: str | None
    """Canonical kind: table, row, field, agent, trigger, skill, memory, message, request, ... (None: unknown)."""
    target: str | None
    """The name or label of what was changed ("Contacts"); for rows, the table they are in. None: not said."""
    count: int | None
    """How many objects it wrote (rows), when the tool said."""
    status: str
    """succeeded, partial, no_op, reused or failed."""
    earlier: bool = False
    """True for a change of an earlier turn (from the stored ledger)."""


@dataclass(frozen=True)
class Suggestion:
    """A proposal card stored this turn."""

    kind: str
    """"preference" or "view_state"."""
    target: str
    """What it would change, e.g. "layout", "lists.layout"."""
    value: object = None


@dataclass(frozen=True)
class Claim:
    """One claimed change found in an answer."""

    action: str | None
    """Canonical action; None for a state ("ready", "now shows", ✅) that says something changed but not how."""
    object: str | None
    """Canonical kind of what changed, None when the answer names none the tables know."""
    target: str | None
    """The name of what changed ("Contacts", "Bob"), when the answer gives one."""
    container: str | None
    """Where it went ("3 rows to Contacts": Contacts), when the answer says."""
    count: int | None
    """How many ("3 rows", "three rows", "tre righe"), when the answer says."""
    earlier: bool
    """True when the claim is plainly about an earlier turn ("in my previous answer I created ...")."""
    form: str
    """How it was said: active, passive, telegraphic, status, state or completion."""
    language: str
    """The language of the words that made it a claim."""
    span: tuple[int, int]
    """Where it is in the answer as given (before normalisation): text[span[0]:span[1]]."""
    text: str
    """The words of the answer it came from."""
    noun: str | None = None
    """The noun of what changed when no kind is known ("a summary"): likely part of the answer, not of the data."""

    def describe(self) -> str:
        """Say the claim in a few plain English words: "3 rows created in Contacts"."""
        what = self.object or self.noun or ("" if self.target else "something")
        if self.count is not None:
            what = f"{self.count} {what}{'' if self.count == 1 or what.endswith('s') else 's'}"
        if self.target:
            what = f"{what} {self.target}".strip()
        where = f" {PLACES.get(self.action, 'in')} {self.container}" if self.container else ""
        return f"{what} {DONE.get(self.action, self.action)}{where}" + (" (an earlier turn)" if self.earlier else "")


@dataclass(frozen=True)
class Finding:
    """The verdict on one claim: what supports it, or why nothing does."""

    claim: Claim
    verdict: str
    """supported, supported_past, unsupported or undecided."""
    changes: tuple[Change, ...]
    """The ledger entries it matched (for an unsupported claim: those that came close, e.g. a failed attempt)."""
    reason: str
    """A short reason a model can read: "claims 3 rows created in Contacts; this turn created 0"."""
    fallback: str
    """The verdict to act on when no verifier decides: the verdict itself unless undecided (see the package doc)."""

    @property
    def accepted(self) -> bool:
        """Tell whether the claim may be shown as it is, with no verifier asked."""
        return self.fallback in (SUPPORTED, SUPPORTED_PAST)
