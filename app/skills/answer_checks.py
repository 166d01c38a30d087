"""Answer checks: the final answer is checked against this turn's tool results before anyone sees it.

An output check (pydantic-ai's output hooks) asks the model again (`ModelRetry`, in the same user turn)
when the answer
- prints a tool call instead of making it;
- says a mode keeps it from acting (modes only decide which tools are loaded, never what is allowed);
- hands the work back to the user ("do it yourself", "fallo manualmente") while no tool failed this turn;
- claims a change that no live mutation result after the latest user prompt supports. A prior success
  (action memory), a reused resource or an explicit no-op never supports a new change claim; a partial
  result supports an answer that says what is unfinished.
When the retries run out the answer says it is unfinished; the turn's tool results stay in its steps.
The claims are found by app/policy/claims/ (five languages, word tables). While on, the answer is
held back and shown once checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_ai import ModelRetry
from pydantic_ai.capabilities import AbstractCapability

from app.policy.claims import claims_change, claims_mode_limit, hands_off, prints_tool_call, says_unfinished
from app.runtime.contract import Skill, SkillContext, evidence, step_result

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
    """The check of one run's answers; `accepted` is the answer that passed (or the unfinished one)."""

    config: Config
    locale: str | None = None
    tools: set[str] = field(default_factory=set)
    mutations: set[str] = field(default_factory=set)
    accepted: str | None = None
    unfinished: str | None = None
    asked: list[str] = field(default_factory=list)

    async def prepare_tools(self, ctx, tool_defs):
        for tool_def in tool_defs:
            self.tools.add(tool_def.name)
            if evidence.is_mutation(tool_def):
                self.mutations.add(tool_def.name)
        return tool_defs

    def problem(self, text: str, messages: list[Any]) -> str | None:
        """Return what is wrong with the answer (a RETRY key), or None."""
        if prints_tool_call(text, self.tools):
            return "printed_call"
        if claims_mode_limit(text):
            return "mode_limit"
        live = evidence.since_latest_prompt(messages)
        failed = any(step_result(part)[1] for message in live for part in getattr(message, "parts", ())
                     if getattr(part, "part_kind", "") in ("tool-return", "retry-prompt") and part.tool_name)
        if self.config.check_handoffs and hands_off(text) and not failed:
            return "handoff"
        if self.config.check_changes and claims_change(text):
            changes = [o for o in evidence.live_outcomes(messages, self.mutations)
                       if o["status"] in ("succeeded", "partial")]
            if not changes:
                return "unsupported"
            if all(o["status"] == "partial" for o in changes) and not says_unfinished(text):
                return "partial"
        return None

    async def after_output_process(self, ctx, *, output_context, output):
        if not isinstance(output, str):
            return output  # calls waiting for a person
        problem = self.problem(output, list(ctx.messages))
        if problem is None:
            self.accepted = output
            return output
        self.asked.append(problem)
        if ctx.retry < ctx.max_retries:
            raise ModelRetry(RETRY[problem])
        self.unfinished = problem
        self.accepted = self.unfinished_answer(problem, list(ctx.messages))
        return self.accepted

    def unfinished_answer(self, problem: str, messages: list[Any]) -> str:
        language = "it" if (self.locale or "").lower().startswith("it") else "en"
        done = evidence.live_outcomes(messages, self.mutations)
        listed = "; ".join(f"{o['tool']}: {o['status']}" for o in done)
        suffix = (f" Fatto in questo turno: {listed}." if language == "it" else f" Done in this turn: {listed}.") \
            if listed else ""
        return UNFINISHED_ANSWER[language].format(reason=problem.replace("_", " "), done=suffix)


def build(config: Config, ctx: SkillContext) -> AnswerChecks:
    return AnswerChecks(config, locale=ctx.extras.get("locale"))


def review(config: Config, built: list[Any], text: str) -> tuple[str, dict[str, Any]]:
    """Show the answer that passed the checks, not the attempts it replaced (the `review_answer` hook)."""
    for item in built:
        if isinstance(item, AnswerChecks) and item.accepted is not None:
            meta = {"answer_check": {"asked_again": item.asked}} if item.asked else {}
            if item.unfinished:
                meta["answer_check"]["unfinished"] = True
            return item.accepted, meta
    return text, {}


skill = Skill(name="answer_checks", title="Answer checks", config=Config, build=build, description=__doc__.strip(),
              gives_tools=False, review_answer=review)
