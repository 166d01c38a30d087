"""Answer checks: every claim of the answer is checked against what this turn's tools did before anyone sees it.

A reviewer in the runtime's answer review (app/runtime/review.py). The model is asked again, in the same
user turn, when the answer
- prints a tool call instead of making it;
- says a mode keeps it from acting (modes only decide which tools are loaded, never what is allowed);
- hands the work back to the user ("do it yourself", "fallo manualmente") while no tool failed this turn;
- claims a change that no change of this turn supports, claim by claim, in any wording and in English,
  Italian, French, Spanish or German (the claims engine, app/policy/claims/): each claimed change needs
  a change of this turn of the same kind, to the same thing, in the same amount ("3 rows" needs three);
  a prior success, a reused resource or an explicit no-op never supports a new claim; a claim plainly
  about an earlier turn is checked against that turn's receipt; a partial result supports an answer that
  says what is unfinished.
What the engine cannot decide goes to the verifier model when one is configured (the model
configuration's `verifier` or `utility` profile), else its documented fallback applies. When the answer's
retry budget is spent, the answer says it is unfinished and what this turn did; the turn's tool results
stay in its steps and its receipt. While on, the answer is held back and shown once checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_ai.capabilities import AbstractCapability

from app.policy.claims import (
    SUPPORTED,
    SUPPORTED_PAST,
    UNDECIDED,
    UNSUPPORTED,
    Finding,
    claims_mode_limit,
    detect_language,
    hands_off,
    prints_tool_call,
    says_unfinished,
)
from app.runtime.contract import Skill, SkillContext, TurnRecord, Verdict

RETRY = {
    "printed_call": "Your answer prints a tool call as text. Make the call with the tool instead, then answer "
                    "with what its result says.",
    "mode_limit": "Your answer says a mode keeps you from acting. Modes only decide which tools are loaded: "
                  "find the tool with search_tools and call it, or say plainly what you cannot do and why.",
    "handoff": "Your answer hands the work back to the user, but no tool failed in this turn. Do it with your "
               "tools; when you need the user's decision, call ask_user.",
    "unsupported": "Your answer claims changes that no tool result of this turn shows (earlier turns, reused "
                   "resources and no-op results do not count): {reasons}. Make each change with a tool, or say "
                   "plainly what was and was not done.",
    "partial": "The tool results of this turn are partial. Say what was done and what is unfinished.",
}
UNFINISHED_ANSWER = {
    "en": "This answer is unfinished: I could not give an answer that matches what this turn did ({reason}). "
          "The steps above show the tool results of this turn.{done}",
    "it": "Questa risposta è incompleta: non sono riuscito a dare una risposta coerente con ciò che è stato fatto "
          "({reason}). I passaggi qui sopra mostrano i risultati degli strumenti di questo turno.{done}",
    "fr": "Cette réponse est inachevée : je n'ai pas pu donner une réponse conforme à ce que ce tour a fait "
          "({reason}). Les étapes ci-dessus montrent les résultats des outils de ce tour.{done}",
    "es": "Esta respuesta está incompleta: no pude dar una respuesta acorde con lo que hizo este turno "
          "({reason}). Los pasos de arriba muestran los resultados de las herramientas de este turno.{done}",
    "de": "Diese Antwort ist unvollständig: Ich konnte keine Antwort geben, die dem entspricht, was in diesem "
          "Zug getan wurde ({reason}). Die Schritte oben zeigen die Ergebnisse der Werkzeuge dieses Zugs.{done}",
}
DONE = {"en": " Done in this turn: {listed}.", "it": " Fatto in questo turno: {listed}.",
        "fr": " Fait dans ce tour : {listed}.", "es": " Hecho en este turno: {listed}.",
        "de": " In diesem Zug erledigt: {listed}."}
REASONS = {"printed_call": "a tool call printed as text", "mode_limit": "a mode said to forbid it",
           "handoff": "the work handed back to you", "unsupported": "a change no tool made",
           "partial": "a partial result told as complete"}
MAX_REASONS = 5


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    check_changes: bool = True
    """Ask again when the answer claims a change no tool result of this turn supports."""
    check_handoffs: bool = True
    """Ask again when the answer tells the user to do the work themselves while no tool failed."""


@dataclass
class AnswerChecks(AbstractCapability[Any]):
    """The answer checks of one run (the review itself is the skill's `review_answer` hook)."""

    config: Config


def refuted(text: str, findings: list[Finding], record: TurnRecord) -> list[Finding]:
    """Return the claims not supported: the unsupported, and the undecided the verifier (or the fallback) refutes."""
    undecided = [f for f in findings if f.verdict == UNDECIDED]
    decided: dict[int, bool] = {}
    if undecided and record.verifier is not None:
        answers = record.verifier.claims(text, [f.claim.text for f in undecided],
                                         [_said(o) for o in record.changes])
        if answers is not None:
            decided = {id(f): answer for f, answer in zip(undecided, answers, strict=True)}
    return [f for f in findings if f.verdict == UNSUPPORTED or (f.verdict == UNDECIDED and not decided.get(
        id(f), f.fallback in (SUPPORTED, SUPPORTED_PAST)))]


def _said(outcome: Mapping[str, Any]) -> str:
    fields = ("tool", "action", "object", "target", "count", "rows", "status")
    return ", ".join(f"{key}={outcome[key]}" for key in fields if outcome.get(key) is not None)


def problem_of(config: Config, text: str, record: TurnRecord) -> tuple[str | None, list[Finding]]:
    """Return what is wrong with the answer (a RETRY key, or None) and the claims it refutes."""
    locale = record.locale
    if prints_tool_call(text, record.tools):
        return "printed_call", []
    if claims_mode_limit(text, locale):
        return "mode_limit", []
    if config.check_handoffs and hands_off(text, locale) and not record.failed_calls():
        return "handoff", []
    if not config.check_changes:
        return None, []
    findings = record.findings(text)
    wrong = refuted(text, findings, record)
    if wrong:
        return "unsupported", wrong
    made = [o for o in record.changes if o.get("status") in ("succeeded", "partial")]
    claimed = any(f.verdict == SUPPORTED for f in findings)
    if claimed and made and all(o["status"] == "partial" for o in made) and not says_unfinished(text, locale):
        return "partial", []
    return None, []


def unfinished_answer(problem: str, text: str, record: TurnRecord) -> str:
    """Say that the answer is unfinished, why, and what this turn did (from its ledger, never the model's words)."""
    language = detect_language(text, record.locale)
    language = language if language in UNFINISHED_ANSWER else "en"
    listed = "; ".join(f"{o['tool']}: {o['status']}" for o in record.changes)
    done = DONE[language].format(listed=listed) if listed else ""
    return UNFINISHED_ANSWER[language].format(reason=REASONS[problem], done=done)


def build(config: Config, ctx: SkillContext) -> AnswerChecks:
    return AnswerChecks(config)


def review(config: Config, built: list[Any], text: str, record: TurnRecord) -> Verdict:
    """Ask again when the answer claims what this turn did not do (the `review_answer` hook)."""
    problem, wrong = problem_of(config, text, record)
    if problem is None:
        return Verdict.keep()
    check: dict[str, Any] = {"problem": problem}
    if wrong:
        check["claims"] = [{"text": f.claim.text[:200], "reason": f.reason[:300]} for f in wrong[:MAX_REASONS]]
    unfinished = Verdict.replaced(unfinished_answer(problem, text, record),
                                  meta={"answer_check": {**check, "unfinished": True}})
    reasons = "; ".join(f"“{f.claim.text.strip()[:120]}” ({f.reason})" for f in wrong[:MAX_REASONS])
    return Verdict.ask_again(RETRY[problem].format(reasons=reasons), otherwise=unfinished,
                             meta={"answer_check": check})


skill = Skill(name="answer_checks", title="Answer checks", config=Config, build=build, description=__doc__.strip(),
              gives_tools=False, review_answer=review)
