"""The answer review: one chain of reviewers, owned by the runtime, judges every answer before anyone sees it.

Each reviewer is a skill's `review_answer` hook (app/runtime/skill.py). They are asked about the same
text, with the turn's record (app/runtime/record.py), in the order of their names — never the order
the skills were configured in — and their verdicts (app/runtime/verdicts.py) apply by one rule:
1. when a reviewer asks again and the answer's budget (REVIEW_RETRIES) is not spent, the model is
   asked again, in the same run, with the feedback of every reviewer that asked;
2. otherwise each ask becomes what it says applies instead (`otherwise`); the replacements, if any,
   are the answer, one after the other; else the revisions apply in order of phase, then name.
A reviewer that raises holds the answer back as unfinished: the run's status says so, the user's message
and the tool results are kept, and the error is logged for admins.

The text the review settles on is stored once: the message, the stream, the exports and the model context
of the next turn all read it, and the attempts it refused are taken out of that context (`shown_context`),
so the model is never told it said what the user did not see.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import ModelRetry
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, RetryFeedbackPart, TextPart, ThinkingPart

from app.runtime.record import TurnRecord
from app.runtime.verdicts import Verdict

log = logging.getLogger(__name__)

# How many times one answer may be sent back to the model, whichever reviewers ask.
REVIEW_RETRIES = 2
UNREVIEWED = ("This answer is held back: it could not be checked, so it is not shown. The steps above show "
              "what this turn did; send your message again to retry.")


@dataclass(frozen=True)
class Reviewer:
    """One skill's review hook, bound to its settings and what it built for the run."""

    name: str
    judge: Callable[[str, TurnRecord], Verdict]


@dataclass
class Settled:
    """What the review settled on: the answer to show and what the message's metadata keeps."""

    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    # The name of the reviewer that failed, when one raised (the answer is then held back).
    failed: str | None = None


@dataclass
class Ask:
    """The model is asked again: what it is told, and who asked."""

    feedback: str
    reviewers: list[str]


def reviewers_of(skills: Sequence[tuple[Any, Any, list[Any]]]) -> list[Reviewer]:
    """Return the review hooks of the skills that built something for the run, in the order of their names."""
    found = [Reviewer(skill.name, _bound(skill, config, built)) for skill, config, built in skills
             if skill.review_answer is not None and built]
    return sorted(found, key=lambda reviewer: reviewer.name)


def _bound(skill: Any, config: Any, built: list[Any]) -> Callable[[str, TurnRecord], Verdict]:
    return lambda text, record: skill.review_answer(config, built, text, record)


def review(reviewers: Sequence[Reviewer], text: str, record: TurnRecord, can_ask: bool) -> Settled | Ask:
    """Ask every reviewer about `text` and apply their verdicts (see the module's rule)."""
    verdicts: list[tuple[str, Verdict]] = []
    for reviewer in sorted(reviewers, key=lambda r: r.name):
        try:
            verdicts.append((reviewer.name, reviewer.judge(text, record)))
        except Exception:  # a broken reviewer must not let an unchecked answer through
            log.exception("the %s reviewer failed; the answer is held back", reviewer.name)
            return Settled(UNREVIEWED, {"review": {"failed": reviewer.name}}, failed=reviewer.name)
    asks = [(name, verdict) for name, verdict in verdicts if verdict.kind == "ask"]
    if asks and can_ask:
        return Ask("\n\n".join(dict.fromkeys(verdict.feedback for _name, verdict in asks)),
                   [name for name, _verdict in asks])
    settled = [(name, verdict.settled()) for name, verdict in verdicts]
    meta: dict[str, Any] = {}
    for _name, verdict in settled:
        meta.update(verdict.meta)
    replacements = list(dict.fromkeys(verdict.text for _name, verdict in settled
                                      if verdict.kind == "replace" and verdict.text))
    if replacements:
        return Settled("\n\n".join(replacements), meta)
    for _name, verdict in sorted(((n, v) for n, v in settled if v.kind == "revise" and v.revise),
                                 key=lambda item: (item[1].phase, item[0])):
        text = verdict.revise(text)
    return Settled(text, meta)


@dataclass
class AnswerReview(AbstractCapability[Any]):
    """Run the review on the run's answer as the model gives it, asking again within the budget."""

    reviewers: list[Reviewer]
    record: TurnRecord
    budget: int = REVIEW_RETRIES
    # What the model was told each time it was asked again (the refused attempts go out of the context).
    feedback: list[str] = field(default_factory=list)
    settled: Settled | None = None

    async def after_output_process(self, ctx, *, output_context, output):
        if getattr(ctx, "partial_output", False) or not isinstance(output, str):
            return output  # calls that wait for a person: `settle` reviews the text the run ended with
        can_ask = len(self.feedback) < self.budget
        # Off the loop: a reviewer may embed sentences or read the database.
        result = await asyncio.to_thread(review, self.reviewers, output, self.record, can_ask)
        if isinstance(result, Ask):
            self.feedback.append(result.feedback)
            self.record.asked.extend(result.reviewers)
            raise ModelRetry(result.feedback)
        self.settled = result
        return result.text

    async def settle(self, text: str) -> Settled:
        """Return what the run's answer settled on; an answer that never reached the model's end is reviewed now."""
        if self.settled is None:
            self.settled = await asyncio.to_thread(review, self.reviewers, text, self.record, False) \
                if text.strip() else Settled(text)
        return self.settled


def shown_context(messages: list[ModelMessage], start: int, text: str, refused: Sequence[str]) -> list[ModelMessage]:
    """Return the run's model context as the user saw it: the refused attempts out, the final text as shown.

    An attempt the review sent back is the response before a request that only carries its feedback; both
    go. `text` is the whole answer shown, which the run's responses wrote in pieces ("Let me look." before
    a tool call, then the rest): the last response says it all (its thinking goes with its old text), the
    earlier ones keep their tool calls and thinking but lose their text, so nothing is said twice.
    """
    feedback = set(refused)
    kept: list[ModelMessage] = list(messages[:start])
    run = list(messages[start:])
    index = 0
    while index < len(run):
        message = run[index]
        following = run[index + 1] if index + 1 < len(run) else None
        if isinstance(message, ModelResponse) and _only_feedback(following, feedback):
            index += 2
            continue
        kept.append(message)
        index += 1
    responses = [position for position in range(start, len(kept)) if isinstance(kept[position], ModelResponse)]
    if responses and (text or any(isinstance(part, TextPart) for part in kept[responses[-1]].parts)):
        for position in responses[:-1]:
            if any(isinstance(part, TextPart) for part in kept[position].parts):
                kept[position] = replace(kept[position], parts=[part for part in kept[position].parts
                                                                if not isinstance(part, TextPart)])
        kept[responses[-1]] = replace(kept[responses[-1]], parts=_with_text(kept[responses[-1]].parts, text))
    return kept


def _only_feedback(message: ModelMessage | None, feedback: set[str]) -> bool:
    return isinstance(message, ModelRequest) and bool(message.parts) and all(
        isinstance(part, RetryFeedbackPart) and str(part.content) in feedback for part in message.parts)


def _with_text(parts: Sequence[Any], text: str) -> list[Any]:
    kept, said = [], False
    for part in parts:
        if isinstance(part, TextPart | ThinkingPart):
            if isinstance(part, TextPart) and not said and text:
                kept.append(TextPart(text))
                said = True
            continue
        kept.append(part)
    if not said and text:
        kept.insert(0, TextPart(text))
    return kept
