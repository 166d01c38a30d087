"""Judge each claim against the turn's record: its changes, the stored ledger of earlier turns, its proposals.

A claim is supported by a change of this turn that fits it (kinds.toml: same action and kind, or a pair of
[support]; the change's target names the claim's thing, or for rows the table the claim names), that
succeeded (or was partial and the claim says only what was done, or the answer says what is unfinished),
and whose counts add up to the claimed number. A claim plainly about an earlier turn is supported-as-past
by a matching stored change. Everything else is unsupported, with the reason: a failed, no-op or reused
attempt, a change of another thing, a prior turn's success used for a new claim, no tool for the action, no
proposal card, and every claim that a preference or view was changed (the server never applies one).
A claim that names nothing, or only a noun no table knows, or whose count no tool reported, is undecided:
see the package docstring for its fallback.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable
from functools import lru_cache

from app.policy.claims.lexicon import Lexicon, singular, tool_kind
from app.policy.claims.records import (
    DONE,
    SUPPORTED,
    SUPPORTED_PAST,
    UNDECIDED,
    UNSUPPORTED,
    Change,
    Claim,
    Finding,
    Suggestion,
)

GOOD = ("succeeded", "partial")
NOT_DONE = {"failed": "failed", "no_op": "changed nothing (no-op)", "reused": "reused what already existed",
            "partial": "was partial"}
TEXTUAL = ("create", "update", "delete", "run", "send", None)
"""Actions that also describe the answer itself ("I created a summary below"): an unknown noun falls back to kept."""
_ENDING = re.compile(r"(?:es|en|s|n|e|i|a|o)$")
"""An inflection a name may carry in a sentence: Contacts/Contact, Kontakten/Kontakte, Contatti/Contatto."""
_SEPARATORS = re.compile(r"[\s_\-.'\"`«»]+")


@lru_cache(maxsize=4096)
def name_key(name: str) -> str:
    """Return the form two names are compared in: case-folded, separators made spaces, no plural s."""
    words = _SEPARATORS.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip().split()
    if not words:
        return ""
    last = _ENDING.sub("", words[-1]) if len(words[-1]) > 4 else words[-1]
    return " ".join([*words[:-1], last])


class Checker:
    def __init__(self, lexicon: Lexicon, changes: Iterable[Change], suggestions: Iterable[Suggestion],
                 tools: Collection[str] | None, calls: Collection[str] | None, unfinished: bool) -> None:
        self.kinds = lexicon.kinds
        self.lexicon = lexicon
        self.changes = list(changes)
        self.current = [c for c in self.changes if not c.earlier]
        self.past = [c for c in self.changes if c.earlier]
        self.suggestions = list(suggestions)
        self.tools = None if tools is None else [tool_kind(name, lexicon) for name in tools]
        self.calls = calls
        self.unfinished = unfinished
        self.targets = {name_key(c.target) for c in self.changes if c.target}
        self.tool_nouns = {kind for _action, kind in self.tools or () if kind} | {c.object for c in self.changes
                                                                               if c.object}

    # -- fitting ---------------------------------------------------------------------------------------------

    def related(self, one: str | None, other: str | None) -> bool:
        return (one is None or other is None or one == other or self.kinds.container.get(one) == other
                or self.kinds.container.get(other) == one)

    def kind_fits(self, claim: Claim, change: Change, kind: str | None) -> bool:
        if claim.action is None:
            return self.related(kind, change.object)
        if claim.action == change.action or change.action == "change":  # "change": the tool's name says no verb
            return kind is None or change.object is None or kind == change.object or (
                (change.action, change.object) in self.kinds.support.get((claim.action, kind), ()))
        return (change.action, change.object) in self.kinds.support.get((claim.action, kind or ""), ())

    def target_fits(self, claim: Claim, change: Change, kind: str | None) -> bool:
        if change.target is None:
            return True
        named_by_container = change.object in self.kinds.named_by_container
        if kind is not None and (kind == self.kinds.container.get(change.object or "")):
            name = claim.target  # a claim about the table, a change of its rows
        elif named_by_container or kind is not None and change.object == self.kinds.container.get(kind):
            name = claim.container or (claim.target if kind is None else None)
            # "Bob Stone: added", "Bob's email updated": a record's name, not a table's; but in "added Ada to
            # Contacts" (nothing but a name and where it went) the place is named, and must be where the rows went.
            if named_by_container and kind != change.object and (claim.container is None or kind is not None) \
                    and name is not None and not self._a_target(name):
                return True
        elif kind is None:
            name = claim.target or claim.container
        else:
            name = claim.target
        return name is None or name_key(name) == name_key(change.target)

    def _a_target(self, name: str) -> bool:
        """Tell whether a name is that of something the ledger changed (a table, an agent), not a record's."""
        return name_key(name) in self.targets

    def matches(self, claim: Claim, kind: str | None, changes: list[Change]) -> list[Change]:
        return [c for c in changes if self.kind_fits(claim, c, kind) and self.target_fits(claim, c, kind)]

    # -- judging ---------------------------------------------------------------------------------------------

    def judge(self, claim: Claim) -> Finding:
        """Return the verdict on one claim."""
        if claim.object in self.kinds.never_applied and claim.action != "suggest":
            card = " A proposal card waits for the user: say that it waits." if self.suggestions else ""
            return self._finding(claim, UNSUPPORTED, (), f"claims {claim.describe()}; the server never applies a "
                                 f"preference or view change, only the user can, by accepting a card.{card}")
        if claim.action == "suggest":
            return self._suggested(claim)
        kind = claim.object
        if kind is None and claim.noun and singular(claim.noun) in self.tool_nouns:
            kind = singular(claim.noun)  # "the ticket": a kind a tool of this agent names
        if kind is None and claim.target is None and claim.container is None and claim.noun is None:
            return self._unnamed(claim)
        found = self.matches(claim, kind, self.current)
        good = [c for c in found if c.status in GOOD and self._rows_written(claim, kind, c)]
        if claim.earlier:
            return self._earlier(claim, kind, good)
        if good:
            return self._counted(claim, kind, good)
        tables = [c for c in found if c.status in GOOD]
        if tables:  # rows claimed, only a table change without rows
            return self._finding(claim, UNSUPPORTED, tuple(tables), f"claims {claim.describe()}; this turn "
                                 f"{DONE.get(claim.action)} 0 {kind}s ({self._summary(tables)})")
        if found:
            why = "; ".join(f"{c.tool}{' ' + c.target if c.target else ''} {NOT_DONE.get(c.status, c.status)}"
                            for c in found)
            return self._finding(claim, UNSUPPORTED, tuple(found), f"claims {claim.describe()}; this turn: {why}")
        past = [c for c in self.matches(claim, kind, self.past) if c.status in GOOD]
        if past:
            return self._finding(claim, UNSUPPORTED, tuple(past), f"claims {claim.describe()} in this turn; only an "
                                 "earlier turn did that (say it was earlier, or do it now)")
        if kind is None and claim.target is None and claim.container is None and claim.noun:
            fallback = SUPPORTED if claim.action in TEXTUAL else UNSUPPORTED
            return self._finding(claim, UNDECIDED, (), f"claims {claim.describe()}: no table knows a "
                                 f"'{claim.noun}', it may be part of the answer", fallback)
        return self._finding(claim, UNSUPPORTED, (), f"claims {claim.describe()}; {self._no_tool(claim, kind)}"
                             f"this turn {self._summary()}")

    def _rows_written(self, claim: Claim, kind: str | None, change: Change) -> bool:
        """A row claim met by a table change needs that change to have written rows."""
        if kind in self.kinds.named_by_container and change.object != kind and change.object is not None:
            return bool(change.count)
        return True

    def _counted(self, claim: Claim, kind: str | None, good: list[Change]) -> Finding:
        done = [c for c in good if c.status == "succeeded"]
        partial = [c for c in good if c.status == "partial"]
        rows = kind in self.kinds.named_by_container or kind is None and all(
            c.object in self.kinds.named_by_container for c in good)
        if claim.count is not None:
            if rows and any(c.count is None for c in good if c.object == kind or kind is None):
                return self._finding(claim, UNDECIDED, tuple(good), f"claims {claim.describe()}; the tools of this "
                                     "turn did not say how many", SUPPORTED)
            total = sum(c.count or 0 for c in good) if rows else len({(c.object, c.target) for c in good})
            if total != claim.count:
                return self._finding(claim, UNSUPPORTED, tuple(good),
                                     f"claims {claim.describe()}; this turn {DONE.get(claim.action)} {total}")
        if partial and not done and not self.unfinished and (claim.count is None or claim.count != sum(
                c.count or 0 for c in partial)):
            return self._finding(claim, UNSUPPORTED, tuple(partial), f"claims {claim.describe()}; the change "
                                 "was partial: say what was done and what is unfinished")
        return self._finding(claim, SUPPORTED, tuple(good), f"{claim.describe()}: {self._summary(good)}")

    def _earlier(self, claim: Claim, kind: str | None, good: list[Change]) -> Finding:
        past = [c for c in self.matches(claim, kind, self.past) if c.status in GOOD]
        if past:
            return self._finding(claim, SUPPORTED_PAST, tuple(past), f"{claim.describe()}: {self._summary(past)}")
        if good:
            return self._finding(claim, SUPPORTED, tuple(good), f"{claim.describe()}: {self._summary(good)}")
        if not self.past:  # fail closed: no stored change of an earlier turn can back it
            return self._finding(claim, UNDECIDED, (), f"claims {claim.describe()}; no earlier turn stored a "
                                 "change to check it against", UNSUPPORTED)
        return self._finding(claim, UNDECIDED, (), f"claims {claim.describe()}; the stored ledger of earlier "
                             f"turns shows no such change ({self._summary(self.past)})", UNSUPPORTED)

    def _unnamed(self, claim: Claim) -> Finding:
        """A claim that names nothing ("Done!", "I've updated it"): what this turn did may be what it means.

        Supported when every change of this turn (of its action, if it says one) succeeded; undecided otherwise,
        kept only when something succeeded and the answer says what is unfinished.
        """
        if claim.action == "run" and self.calls:
            return self._finding(claim, SUPPORTED, (), f"{claim.describe()}: a tool ran this turn")
        fitting = [c for c in self.current if claim.action in (None, c.action) or c.action == "change"]
        succeeded = [c for c in fitting if c.status == "succeeded"]
        if succeeded and len(succeeded) == len(fitting):
            return self._finding(claim, SUPPORTED, tuple(succeeded), f"{claim.describe()}: {self._summary(fitting)}")
        fallback = SUPPORTED if succeeded and self.unfinished else UNSUPPORTED
        return self._finding(claim, UNDECIDED, tuple(fitting), f"claims {claim.describe()} and names nothing; "
                             f"this turn {self._summary()}", fallback)

    def _suggested(self, claim: Claim) -> Finding:
        if self.suggestions:
            return self._finding(claim, SUPPORTED, (), f"a proposal card was stored ({self.suggestions[0].target})")
        if claim.earlier:
            return self._finding(claim, UNDECIDED, (), "claims a proposal of an earlier turn; proposals of "
                                 "earlier turns are not stored here", SUPPORTED)
        return self._finding(claim, UNSUPPORTED, (), "claims a suggestion waits on its card, but no proposal card "
                             "was stored this turn")

    def _no_tool(self, claim: Claim, kind: str | None) -> str:
        if self.tools is None or claim.action is None:
            return ""
        for action, tool_object in self.tools:  # a tool whose name has no verb (list_tables) changes nothing known
            if action == claim.action and (kind is None or tool_object in (None, kind)):
                return ""
            if (action, tool_object) in self.kinds.support.get((claim.action, kind or ""), ()):
                return ""
        return f"no tool of this agent can {claim.action} {kind or 'that'}; "

    def _summary(self, changes: list[Change] | None = None) -> str:
        changes = self.current if changes is None else changes
        if not changes:
            return "changed nothing"
        return "; ".join(f"{c.tool}{' ' + c.target if c.target else ''} {c.status}"
                         f"{f' ({c.count})' if c.count is not None else ''}" for c in changes)

    @staticmethod
    def _finding(claim: Claim, verdict: str, changes: tuple[Change, ...], reason: str,
                 fallback: str | None = None) -> Finding:
        return Finding(claim, verdict, changes, reason, fallback or verdict)
