"""Answer checks: every claim of the answer is checked against what this turn's tools did before anyone sees it.

A reviewer in the runtime's answer review (app/runtime/review.py). The model is asked again, in the same
user turn, when the answer
- prints a tool call instead of making it;
- says a mode keeps it from acting (modes only decide which tools are loaded, never what is allowed);
- hands the work back to the user ("do it yourself", "fallo manualmente") while no tool failed this turn;
- claims a change that no change of this turn supports. A prior success, a reused resource or an
  explicit no-op never supports a new change claim; a partial result supports an answer that says what
  is unfinished.
When the answer's retry budget is spent, the answer says it is unfinished and what this turn did; the
turn's tool results stay in its steps and its receipt. The claim patterns are those of
app/policy/claims. While on, the answer is held back and shown once checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_ai.capabilities import AbstractCapability

from app.policy.claims import claims_change, claims_mode_limit, hands_off, prints_tool_call, says_unfinished
from app.runtime.contract import Skill, SkillContext, TurnRecord, Verdict

RETRY = {
    "printed_call": "Your answer prints a tool call as text. Make the call with the tool instead, then answer "
                    "with what its result says.",
    "mode_limit": "Your answer says a mode keeps you from acting. Modes only decide which tools are loaded: "
                  "find the tool with search_tools and call it, or say plainly what you cannot do and why.",
    "handoff": "Your answer hands the work back to the user, but no tool failed in this turn. Do it with your "
               "tools; when you need the user's decision, call ask_user.",
    "unsupported": "Your answer claims a change, but no tool result of this turn shows one (earlier turns, "
                   "reused resources and no-op results do not count). Make the change with a tool, or say "
                   "that nothing was changed.",
    "partial": "The tool results of this turn are partial. Say what was done and what is unfinished.",
}
UNFINISHED_ANSWER = {
    "en": "This answer is unfinished: I could not give an answer that matches what this turn did ({reason}). "
          "The steps above show the tool results of this turn.{done}",
    "it": "Questa risposta è incompleta: non sono riuscito a dare una risposta coerente con ciò che è stato fatto "
          "({reason}). I passaggi qui sopra mostrano i risultati degli strumenti di questo turno.{done}",
}


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


def problem_of(config: Config, text: str, record: TurnRecord) -> str | None:
    """Return what is wrong with the answer (a RETRY key), or None."""
    if prints_tool_call(text, record.tools):
        return "printed_call"
    if claims_mode_limit(text):
        return "mode_limit"
    if config.check_handoffs and hands_off(text) and not record.failed_calls():
        return "handoff"
    if config.check_changes and claims_change(text):
        changes = [o for o in record.changes if o["status"] in ("succeeded", "partial")]
        if not changes:
            return "unsupported"
        if all(o["status"] == "partial" for o in changes) and not says_unfinished(text):
            return "partial"
    return None


def unfinished_answer(problem: str, record: TurnRecord) -> str:
    """Say that the answer is unfinished, why, and what this turn did (from its ledger, never the model's words)."""
    language = "it" if (record.locale or "").lower().startswith("it") else "en"
    listed = "; ".join(f"{o['tool']}: {o['status']}" for o in record.changes)
    suffix = (f" Fatto in questo turno: {listed}." if language == "it" else f" Done in this turn: {listed}.") \
        if listed else ""
    return UNFINISHED_ANSWER[language].format(reason=problem.replace("_", " "), done=suffix)


def build(config: Config, ctx: SkillContext) -> AnswerChecks:
    return AnswerChecks(config)


def review(config: Config, built: list[Any], text: str, record: TurnRecord) -> Verdict:
    """Ask again when the answer claims what this turn did not do (the `review_answer` hook)."""
    problem = problem_of(config, text, record)
    if problem is None:
        return Verdict.keep()
    unfinished = Verdict.replaced(unfinished_answer(problem, record),
                                  meta={"answer_check": {"problem": problem, "unfinished": True}})
    return Verdict.ask_again(RETRY[problem], otherwise=unfinished, meta={"answer_check": {"problem": problem}})


skill = Skill(name="answer_checks", title="Answer checks", config=Config, build=build, description=__doc__.strip(),
              gives_tools=False, review_answer=review)
