"""Proposals: the assistant suggests a change to a declared target; the user accepts or refuses; the client applies.

A proposal is data, a target and a value, never code, markup, a link or a tool call. Each call of
a proposal tool is untrusted input, checked here (ProposalRejected says what to fix, and the skill
hands it to the model as a ModelRetry, storing nothing):
- the target is one the page declared (context.page.proposable, checked by app/assistance/targets.py);
- the value, given as JSON text, parses strictly and satisfies the schema the page declared;
- the reason is plain text of at most 240 characters: no markup, link or control character, and it
  passes the output guardrails (app/runtime/guardrails.py);
- at most three proposals per message, and one per target.
A value already in force (the `current` the page declared) is no proposal: it is refused with a plain statement
(AlreadyInForce), not as a mistake, and no card is made.
The server never applies a proposal and keeps no record of the user's decision.

An answer that claims a pending proposal was applied ("I have updated", "ho modificato", ...) is
replaced by a plain statement that the suggestion waits for the user (`review_answer`).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Callable
from typing import Any

from app.policy.claims import detect_language, find_claims
from app.policy.schema_subset import InvalidJSON, compact_json, compile_schema, loads_json

# The kinds of target a page may declare, each with the names that identify one (targets.py checks them).
KINDS = {"preference": ("namespace", "key"), "view_state": ("resource", "view")}
MAX_PROPOSALS = 3
MAX_REASON = 240
SCHEMA_VERSION = 1
MARKUP = re.compile(r"[<>`]|\]\(|\*\*|__|^#|^\s*[-*] ", re.MULTILINE)
LINK = re.compile(r"(?i)\b(?:https?|ftp|file|mailto|javascript|data):|\bwww\.|"
                  r"\b[\w-]+\.(?:com|org|net|io|it|dev|app)\b")

PENDING = {
    "en": "I suggested a change. It waits for you: accept or refuse it on its card. Nothing changes until "
          "you accept it.",
    "it": "Ho proposto una modifica. Attende la tua decisione: accettala o rifiutala nella sua scheda. "
          "Finché non la accetti non cambia nulla.",
    "fr": "J'ai proposé une modification. Elle attend votre décision : acceptez-la ou refusez-la sur sa carte. "
          "Rien ne change tant que vous ne l'acceptez pas.",
    "es": "He propuesto un cambio. Espera tu decisión: acéptalo o recházalo en su tarjeta. Nada cambia hasta "
          "que lo aceptes.",
    "de": "Ich habe eine Änderung vorgeschlagen. Sie wartet auf dich: Nimm sie auf ihrer Karte an oder lehne "
          "sie ab. Bis du sie annimmst, ändert sich nichts.",
}


NOT_PROPOSED = {
    "en": "Nothing was changed: I can only suggest changes to what this page offers, as cards you accept or "
          "refuse, and I made no suggestion in this answer.",
    "it": "Non è cambiato nulla: posso solo proporre modifiche a ciò che questa pagina offre, come schede che "
          "accetti o rifiuti, e in questa risposta non ho proposto nulla.",
    "fr": "Rien n'a changé : je peux seulement proposer des modifications de ce que cette page permet, sous forme "
          "de cartes que vous acceptez ou refusez, et je n'ai rien proposé dans cette réponse.",
    "es": "No ha cambiado nada: solo puedo proponer cambios de lo que esta página ofrece, como tarjetas que "
          "aceptas o rechazas, y en esta respuesta no he propuesto nada.",
    "de": "Es hat sich nichts geändert: Ich kann nur Änderungen an dem vorschlagen, was diese Seite anbietet, als "
          "Karten, die du annimmst oder ablehnst, und in dieser Antwort habe ich nichts vorgeschlagen.",
}
NOT_PROPOSED_FEEDBACK = (
    "Your answer says a change was applied, or points at a suggestion to accept, but no proposal was stored in "
    "this turn: nothing was changed and there is no card. Only a successful propose_* call makes a suggestion, "
    "and the server never applies one. Say what you can do, or make the proposal with the tool."
)
# "Accept it on its card": a pointer at a card, which only a stored proposal makes.
CARD_POINTERS = (
    re.compile(r"(?i)\b(?:accept|refuse|approve)\s+(?:it|this|the\s+\w+\s+)?\s*(?:on|in|from)\s+(?:its|the)\s+card\b"),
    re.compile(r"(?i)\baccettal[ao]\b.{0,40}\bscheda\b|\bacceptez?-la\b.{0,40}\bcarte\b|\bacéptala\b.{0,40}\btarjeta\b"
               r"|\bakzeptier(?:e|en\s+Sie)\b.{0,60}\bKarte\b"),
)


class ProposalRejected(ValueError):
    """A proposal call that breaks a rule; the message tells the model what to fix."""


class AlreadyInForce(ValueError):
    """A proposal of the value the target already has; the message says so, for the model to tell the user."""


def check_reason(reason: Any, check_output: Callable[[str], str | None] | None = None) -> str:
    """Return the reason when it is plain text within the limit that passes the output guardrails.

    `check_output` is the run's guardrail check (it names the rule a text breaks and what it asks); raise
    ProposalRejected, naming the rule, otherwise.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise ProposalRejected("Give a short reason in plain text.")
    reason = reason.strip()
    if len(reason) > MAX_REASON:
        raise ProposalRejected(f"The reason is {len(reason)} characters; keep it under {MAX_REASON}.")
    if any(unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") for char in reason):
        raise ProposalRejected("The reason must be one line of plain text, with no control character.")
    if MARKUP.search(reason) or LINK.search(reason):
        raise ProposalRejected("The reason must be plain text: no markup, no link, no address.")
    problem = check_output(reason) if check_output is not None else None
    if problem is not None:
        raise ProposalRejected(f"The reason breaks {problem}; write it again without that.")
    return reason


class ProposalCollector:
    """The proposals of one message: checked against the targets its page declared."""

    def __init__(self, declared: list[dict[str, Any]],
                 check_output: Callable[[str], str | None] | None = None,
                 stored: list[dict[str, Any]] | None = None) -> None:
        self.check_output = check_output
        self.targets: dict[tuple[str, ...], tuple[dict[str, Any], Any]] = {}
        for entry in declared:
            key = (entry["kind"], *(entry["target"][name] for name in KINDS[entry["kind"]]))
            self.targets[key] = (entry, compile_schema(entry["schema"]))
        # The list the accepted proposals go to (the turn's record, when the caller gives it).
        self.proposals: list[dict[str, Any]] = stored if stored is not None else []

    def kinds(self) -> set[str]:
        """Return the kinds of target the page declared."""
        return {key[0] for key in self.targets}

    def propose(self, kind: str, target: dict[str, str], value_json: str, reason: str) -> dict[str, Any]:
        """Check one proposal and keep it; return it as it is stored in the message's metadata."""
        key = (kind, *(target.get(name) for name in KINDS[kind]))
        if key not in self.targets:
            declared = [dict(zip(KINDS[k[0]], k[1:], strict=True)) for k in self.targets if k[0] == kind]
            raise ProposalRejected(f"That target was not declared by the page. Declared {kind} targets: {declared}.")
        if len(self.proposals) >= MAX_PROPOSALS:
            raise ProposalRejected(f"A message holds at most {MAX_PROPOSALS} proposals; do not propose more.")
        if any(p["kind"] == kind and p["target"] == dict(zip(KINDS[kind], key[1:], strict=True))
               for p in self.proposals):
            raise ProposalRejected("This target already has a proposal in this message; propose it once.")
        entry, schema = self.targets[key]
        try:
            value = loads_json(value_json) if isinstance(value_json, str) else None
        except InvalidJSON as error:
            raise ProposalRejected(f"The value must be JSON text: {error}.") from None
        if not isinstance(value_json, str):
            raise ProposalRejected("Give the value as JSON text, e.g. \"cards\" with its quotes.")
        errors = schema.errors(value)
        if errors:
            raise ProposalRejected(f"The value does not fit the target's schema {schema.schema}: {errors[0]}.")
        current = entry.get("current")
        # Compared as JSON, so that true is not 1; a target that declared no current value has none in force.
        if current is not None and compact_json(value) == compact_json(current):
            name = ".".join(str(part) for part in key[1:])
            raise AlreadyInForce(f"Nothing to propose: {name} is already {compact_json(value)}, so there is no card. "
                                 "Tell the user it is already so; do not say that you changed or suggested it.")
        proposal = {"id": str(uuid.uuid4()), "schemaVersion": SCHEMA_VERSION, "kind": kind,
                    "target": dict(entry["target"]), "current": entry.get("current"), "proposed": value,
                    "reason": check_reason(reason, self.check_output)}
        self.proposals.append(proposal)
        return proposal


def _language(answer: str, locale: str | None) -> str:
    """The answer's own language (the page's locale is a hint), among those the statements are written in."""
    language = detect_language(answer, locale) if answer else (locale or "en")[:2].lower()
    return language if language in PENDING else "en"


def pending_statement(locale: str | None = None, answer: str = "") -> str:
    """Say plainly, in the answer's language, that the suggestion waits for the user (never that it was applied)."""
    return PENDING[_language(answer, locale)]


def nothing_changed(locale: str | None = None, answer: str = "") -> str:
    """Say plainly, in the answer's language, that nothing changed and no suggestion was made in this answer."""
    return NOT_PROPOSED[_language(answer, locale)]


def claims_suggestion(text: str, locale: str | None = None) -> bool:
    """Tell whether an answer says it suggested something (five languages), or points at a card to accept."""
    return any(claim.action == "suggest" and not claim.earlier for claim in find_claims(text, locale)) \
        or any(pattern.search(text) for pattern in CARD_POINTERS)
