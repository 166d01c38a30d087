"""The claims engine: every change an answer claims, found in any wording and checked against the turn's ledger.

Pure and deterministic (standard library and jsonschema), in the lowest layer: the runtime's answer review
calls it; a verifier model, when one is configured, is asked only about what it leaves undecided.

    from app.policy.claims import Change, Suggestion, check_claims

    changes = [Change("create_table", "create", "table", "Contacts", None, "succeeded")]
    for finding in check_claims("I created Contacts and added 3 rows.", changes, locale="en"):
        finding.verdict    # "supported" for the table; "unsupported" for the rows:
        finding.reason     # "claims 3 rows created in Contacts; this turn created 0 rows (create_table ...)"

The API
- `find_claims(text, locale=None) -> list[Claim]`: each claimed change with its action, kind of object,
  target, container ("to Contacts"), count, whether it is about an earlier turn, its form, language and span.
- `check_claims(text, changes=(), suggestions=(), locale=None, *, tools=None, calls=None) -> list[Finding]`:
  a verdict per claim. `changes`: the ledger (`Change`, those of earlier turns with `earlier=True`);
  `suggestions`: the proposal cards stored this turn; `tools`: the names of the tools the agent had (a claim no
  tool could make says so in its reason); `calls`: the names of every tool called this turn, mutating or not
  (a "run" claim that names nothing is met by any call).
- `Finding`: `claim`, `verdict` (supported, supported_past, unsupported, undecided), `changes` (what it
  matched, or what came close), `reason` (for a model: "claims 3 rows created in Contacts; this turn
  created 0"), `fallback` and `accepted` (see below).
- `change_from_outcome(outcome, earlier=False) -> Change`: a ledger entry from an outcome of
  app/runtime/evidence.py (action and kind read from the tool's name, kinds.toml [tools]).
- `detect_language(text, locale=None) -> str`: the answer's language ("en", "it", "fr", "es", "de").
- The other checks of an answer, in the five languages: `prints_tool_call(text, tool_names)`,
  `claims_mode_limit(text)`, `hands_off(text)`, `says_unfinished(text)`; and `claims_change(text)` (any claim
  of this turn but a suggestion), `claims_applied(text)` (a claim that something was changed or applied:
  the proposals' check).

Undecided, and its fallback. A claim is undecided when the ledger can neither support nor refute it: it names
nothing ("Done!", "I've updated it" with nothing to refer to), names only a noun no table or tool knows
("I created a summary below"), claims a count no tool reported, or speaks of an earlier turn with no matching
stored change. `Finding.fallback` is the verdict to act on when no verifier decides, chosen to keep false
refusals low without letting an empty turn claim success:
- names nothing: supported when this turn changed something that succeeded, else unsupported;
- only an unknown noun: supported for create, update, delete, run and send (they also describe the answer
  itself), unsupported for schedule and remember (they never do);
- a count no tool reported: supported (a matching change exists, only its number is unknown);
- an earlier turn: unsupported unless a stored receipt of an earlier turn shows that change (fail closed:
  earlier turns that changed nothing, or answers from before receipts, back no claim).
`Finding.accepted` is True when the fallback is supported or supported_past.

The word tables are TOML files in words/ (one per language, and kinds.toml); words/README.md says what each
table means and how to add a language. Cost: linear in the answer's length; about 1.5–2 ms CPU per answer of 100–300
words and 0.4 s for an adversarial 88,000-character one on the shared 2-core machine (benchmarks/claims.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from functools import lru_cache
from typing import Any

from app.policy.claims import signals
from app.policy.claims.checker import Checker
from app.policy.claims.finder import Finder
from app.policy.claims.lexicon import Lexicon, WordTableError, load, tool_kind
from app.policy.claims.reading import Reading, read
from app.policy.claims.records import (
    STATUSES,
    SUPPORTED,
    SUPPORTED_PAST,
    UNDECIDED,
    UNSUPPORTED,
    VERDICTS,
    Change,
    Claim,
    Finding,
    Suggestion,
)

__all__ = [
    "Change", "Claim", "Finding", "Suggestion", "SUPPORTED", "SUPPORTED_PAST", "UNSUPPORTED", "UNDECIDED", "VERDICTS",
    "WordTableError", "LEXICON", "find_claims", "check_claims", "change_from_outcome", "detect_language",
    "claims_change", "claims_applied", "is_applied", "says_unfinished", "claims_mode_limit", "hands_off",
    "prints_tool_call",
]

LEXICON: Lexicon = load()
ID_LISTS = ("ids", "row_ids", "record_ids", "created_row_ids", "updated_row_ids", "deleted_row_ids", "sample_row_ids")


@lru_cache(maxsize=32)
def _reading(text: str, locale: str | None) -> Reading:
    return read(text, LEXICON, locale)


@lru_cache(maxsize=32)
def _claims(text: str, locale: str | None) -> tuple[Claim, ...]:
    return tuple(Finder(_reading(text, locale), LEXICON).run())


def find_claims(text: str, locale: str | None = None) -> list[Claim]:
    """Return every change the answer claims, in the order it says them."""
    return list(_claims(text, locale))


def check_claims(text: str, changes: Iterable[Change] = (), suggestions: Iterable[Suggestion] = (),
                 locale: str | None = None, *, tools: Collection[str] | None = None,
                 calls: Collection[str] | None = None) -> list[Finding]:
    """Return the verdict on each claim of the answer against the turn's ledger and proposals."""
    claims = _claims(text, locale)
    if not claims:
        return []
    checker = Checker(LEXICON, changes, suggestions, tools, calls, signals.says_unfinished(_reading(text, locale)))
    return [checker.judge(claim) for claim in claims]


def detect_language(text: str, locale: str | None = None) -> str:
    """Return the language of an answer from its words; the locale breaks ties and speaks for an empty answer."""
    return _reading(text, locale).language


def change_from_outcome(outcome: Mapping[str, Any], earlier: bool = False) -> Change:
    """Return the ledger entry of one outcome of app/runtime/evidence.py (tool, status, counts, names)."""
    tool = str(outcome.get("tool") or "")
    action, kind = tool_kind(tool, LEXICON)
    count = outcome.get("count")
    if not isinstance(count, int) or isinstance(count, bool):
        lists = [outcome[key] for key in ID_LISTS if isinstance(outcome.get(key), list)]
        count = len(lists[0]) if lists else None
    target = next((str(outcome[key]) for key in ("label", "table", "name") if isinstance(outcome.get(key), str)),
                  None)
    status = outcome.get("status") if outcome.get("status") in STATUSES else "succeeded"
    return Change(tool, action or "change", kind, target, count, str(status), earlier)


def claims_change(text: str, locale: str | None = None) -> bool:
    """Tell whether an answer claims a change of this turn (a suggestion waiting on its card is none)."""
    return any(claim.action != "suggest" and not claim.earlier for claim in _claims(text, locale))


def claims_applied(text: str, locale: str | None = None) -> bool:
    """Tell whether an answer says that something was changed or applied (a preference, a view, "Done!")."""
    return any(is_applied(claim) for claim in _claims(text, locale))


def is_applied(claim: Claim) -> bool:
    """Tell whether a claim says something was changed or applied (the proposals' check): a state, an update,
    or a change of what only a proposal could change (a preference, a layout, a view)."""
    return claim.action != "suggest" and not claim.earlier and (
        claim.action in (None, "update") or claim.object in LEXICON.kinds.never_applied)


def says_unfinished(text: str, locale: str | None = None) -> bool:
    """Tell whether an answer says what is unfinished, failed or left to do."""
    return signals.says_unfinished(_reading(text, locale))


def claims_mode_limit(text: str, locale: str | None = None) -> bool:
    """Tell whether an answer says a mode keeps it from doing something (modes never do)."""
    return signals.claims_mode_limit(_reading(text, locale))


def hands_off(text: str, locale: str | None = None) -> bool:
    """Tell whether an answer tells the user to do the work themselves."""
    return signals.hands_off(_reading(text, locale))


prints_tool_call = signals.prints_tool_call
