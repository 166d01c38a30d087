"""What a run produced while it streamed: its text, tool steps, usage and any calls left waiting.

The runtime fills an `Outcome` from pydantic-ai's stream events (and stores each as a run event);
`_finish` in the runtime writes it to the database in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.tools import DeferredToolRequests

from app.policy.claims import claims_change
from app.runtime.events import EventWriter
from app.runtime.guardrails import REFUSAL, OutputGuardrail, refused_context
from app.runtime.receipt import KEY as RECEIPT_KEY
from app.runtime.receipt import receipt_of
from app.runtime.record import TurnRecord
from app.runtime.review import AnswerReview

STEP_RESULT_CHARS = 4_000
UNREVIEWED_ERROR = "The answer could not be checked, so it is held back; the tool results of this turn are kept."


@dataclass
class Outcome:
    status: str = "succeeded"
    error: str | None = None
    messages: list[ModelMessage] | None = None
    text: list[str] = field(default_factory=list)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    # What went wrong in the libraries' words, for admins (app/runtime/failures.py); `error` says it for users.
    error_detail: str | None = None
    # The agent's skills as built for the run: (skill, its validated Config, what its build returned).
    skills: list[tuple[Any, Any, list[Any]]] = field(default_factory=list)
    # The turn's record and the answer review of the run (None when no agent was built).
    record: TurnRecord | None = None
    review: AnswerReview | None = None
    # The calls the run ended on because they wait for a person (approval, plan, question).
    waiting: DeferredToolRequests | None = None
    # The run's output rules (app/runtime/guardrails.py); None when no agent was built.
    guardrail: OutputGuardrail | None = None


def translate(event: Any, writer: EventWriter, outcome: Outcome) -> None:
    """Turn one stream event into text or a tool step of the outcome, and a stored run event."""
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        if outcome.text and not "".join(outcome.text).endswith("\n"):
            outcome.text.append("\n\n")
            writer.text("\n\n")
        outcome.text.append(event.part.content)
        writer.text(event.part.content)
        writer.writing()
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        outcome.text.append(event.delta.content_delta)
        writer.text(event.delta.content_delta)
    elif isinstance(event, FunctionToolCallEvent):
        step = {"id": event.part.tool_call_id, "name": event.part.tool_name,
                "args": event.part.args_as_json_str(), "result": None, "failed": False}
        outcome.steps[step["id"]] = step
        writer.emit("tool_call", {"id": step["id"], "name": step["name"], "args": step["args"]})
    elif isinstance(event, FunctionToolResultEvent):
        part = event.part
        content, failed = step_result(part)
        step = outcome.steps.setdefault(part.tool_call_id, {"id": part.tool_call_id, "name": part.tool_name,
                                                            "args": "{}"})
        step.update(result=clip(content), failed=failed)
        writer.emit("tool_result", {"id": part.tool_call_id, "name": part.tool_name, "args": step["args"],
                                    "result": step["result"], "failed": failed})


async def settle(outcome: Outcome, writer: EventWriter) -> None:
    """Settle the answer the run ends with: the review's text replaces the held one, and its receipt is added.

    The review ran in the run when the model gave its answer; an answer that did not get there (the run
    waits for a person, failed or was stopped) is reviewed now, without asking again. A reviewer that
    failed leaves the answer held back and the run `unfinished`. Every answer of a turn that called a
    mutation, or whose text claims a change, gets the receipt of the turn's changes.
    """
    review, record = outcome.review, outcome.record
    if review is None or record is None:
        return
    if review.reviewers:
        settled = await review.settle("".join(outcome.text))
        if settled.failed is not None:
            outcome.status, outcome.error = "unfinished", UNREVIEWED_ERROR
        outcome.meta.update(settled.meta)
        if record.asked:
            outcome.meta["review"] = {**outcome.meta.get("review", {}), "asked_again": list(record.asked)}
        if writer.holding:
            writer.discard_text()
            writer.text(settled.text)  # lands with the end event, in the transaction of the message
        outcome.text = [settled.text]
    # An answer the review sent back had claimed something: its receipt says what really changed.
    found = receipt_of(record.changes, bool(record.asked) or claims_change("".join(outcome.text)))
    if found is not None:
        outcome.meta[RECEIPT_KEY] = found


def guard_output(outcome: Outcome, writer: EventWriter, start: int) -> bool:
    """Refuse the answer when it breaks an output rule; return whether it was refused (app context).

    A refused answer becomes REFUSAL in the message, the stream and the model context (the run's
    responses from `start` on); the status is `refused`, with no error, no rule and no waiting calls.
    """
    if outcome.guardrail is None or outcome.guardrail.broken_rule("".join(outcome.text)) is None:
        return False
    outcome.status, outcome.error, outcome.waiting = "refused", None, None
    outcome.text, outcome.meta = [REFUSAL], {}
    if outcome.messages:
        outcome.messages = refused_context(outcome.messages, start, outcome.guardrail)
    writer.discard_text()
    writer.text(REFUSAL)  # held from now on (discard_text), so this lands with the end event
    return True


def answer_meta(outcome: Outcome) -> None:
    """Add what the skills' `answer_meta` hooks keep to the answer's metadata (e.g. the action memory)."""
    for skill, config, built in outcome.skills:
        if skill.answer_meta is not None and built:
            outcome.meta.update(skill.answer_meta(config, built))


def step_result(part: Any) -> tuple[str, bool]:
    """Return a tool result's text and whether its step failed, by the one rule for every tool.

    A step failed unless the call returned successfully: a refusal or an error (`ToolFailed`, an
    exception), a correction asked of the model (`ModelRetry`, invalid arguments) and a call a person
    denied all fail. So a skill refuses by raising, never by returning text.
    """
    content = part.model_response_str() if hasattr(part, "model_response_str") else str(part.content)
    return content, part.part_kind == "retry-prompt" or getattr(part, "outcome", "success") != "success"


def count_usage(outcome: Outcome, usage: Any) -> None:
    """Take the run's token usage as pydantic-ai reports it."""
    if usage is not None:
        outcome.input_tokens = usage.input_tokens or 0
        outcome.output_tokens = usage.output_tokens or 0
        outcome.requests = usage.requests or 0


def usage_from_messages(outcome: Outcome, start: int) -> None:
    """Sum the usage of the responses after `start` when the run ended without reporting it."""
    if outcome.input_tokens or not outcome.messages:
        return
    for message in outcome.messages[start:]:
        if isinstance(message, ModelResponse):
            outcome.input_tokens += message.usage.input_tokens or 0
            outcome.output_tokens += message.usage.output_tokens or 0
            outcome.requests += 1


def clip(text: str) -> str:
    """Cut a tool result to what a step shows."""
    return text if len(text) <= STEP_RESULT_CHARS else text[:STEP_RESULT_CHARS] + "…"
