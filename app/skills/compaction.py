"""Compaction: long-running agents keep working instead of failing on the context window.

Old tool results are cleared and, if that is not enough, the middle of the conversation is replaced by
one summary. What the user sees in the chat is never changed; only what the model is given.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.exceptions import ModelContextWindowExceededError, ModelHTTPError, RetryModelRequest
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.models import Model, ModelRequestContext

from app.extensions import db, jobs
from app.models import Agent, CompactionRecord, Conversation, Message, ModelConfig
from app.runtime.contract import (
    MAX_RATIO,
    CompactionResult,
    ModelSpec,
    ModelUnavailable,
    Skill,
    SkillContext,
    Summarizer,
    TurnEnd,
    build_model,
    compact,
    estimate_tokens,
    load_history,
    model_spec_for,
    profile_for,
    run_on_loop,
    threshold_target,
    usage_ratio,
)

log = logging.getLogger(__name__)

# The 400 answers pydantic-ai does not classify: llama.cpp, Ollama and other OpenAI-compatible servers.
OVERFLOW_TEXT = re.compile(
    r"exceed_context_size|context[ _-]?(length|size|window)|maximum context|prompt (is )?too long"
    r"|input (is )?too long|too many (input )?tokens|exceeds? (the )?(available )?context",
    re.IGNORECASE,
)


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    compact_above: int = Field(100_000, ge=1_000, title="Compact above")
    """The size, in tokens, at which the conversation gets shortened. Set it below the context window of
    the model you are using - 100,000 is a safe start for a 200,000 token model. A token is roughly four
    characters."""

    how_to_shorten: Literal["both", "clear", "summarize"] = Field("both", title="How to shorten")
    """Whether to clear old tool results, summarize older messages, or both. Both is recommended."""

    keep_recent_tool_results: int = Field(10_000, ge=0, title="Keep recent tool results")
    """How much of the newest tool output (tokens) is never cleared. The results of whatever the agent is
    working on right now are always kept, whatever this is set to."""

    minimum_worth_clearing: int = Field(5_000, ge=0, title="Minimum worth clearing")
    """Nothing is cleared unless doing so frees at least this many tokens, so the agent does not lose data
    for a negligible gain."""

    keep_recent_messages: int = Field(20_000, ge=0, title="Keep recent messages")
    """How much of the most recent conversation (tokens) is kept word for word and never replaced by the
    summary."""

    summary_instructions: str = Field("", max_length=2_000, title="Summary instructions")
    """Optional. What the summary must always pay attention to for this agent, for example which
    identifiers must never be lost."""

    summarize_with: int | None = Field(None, ge=1, title="Summarize with")
    """Optional. The id of a different, usually cheaper, model configuration to write the summary with."""

    summary_model: str | None = Field(None, max_length=120, title="Summary model")
    """Optional. Use a different model for the summary only (a model name of the configuration used)."""

    tool_result_size_in_summary: int = Field(2_000, ge=100, title="Tool result size in summary")
    """How much of each tool result (characters) is shown to the summarizer before it is cut short."""

    total_size_in_summary: int = Field(120_000, ge=2_000, title="Total size in summary")
    """The limit, in characters, on the whole conversation handed to the summarizer. That request has to
    fit in the context window as well."""

    allow_compact: bool = Field(True, title="Allow /compact")
    """Whether the user may shorten the conversation on demand by typing /compact."""

    show_notice: bool = Field(True, title="Show a notice")
    """Whether to tell the user in the chat that the conversation was shortened."""

    keep_record: bool = Field(False, title="Keep a record")
    """Whether to store what was summarized away, for looking at afterwards. It is not shown to the user
    or to the agent."""

    @field_validator("keep_recent_tool_results", "keep_recent_messages")
    @classmethod
    def below_threshold(cls, value: int, info: ValidationInfo) -> int:
        above = info.data.get("compact_above")
        if above is not None and value >= above:
            raise ValueError(f"Keep this below Compact above ({above:,}), or nothing could be shortened.")
        return value


def is_context_overflow(error: Exception) -> bool:
    """Tell whether a provider rejected a request for being larger than the context window."""
    if isinstance(error, ModelContextWindowExceededError):
        return True
    if isinstance(error, ModelHTTPError) and error.status_code in (400, 413):
        body = error.body if isinstance(error.body, str) else json.dumps(error.body, default=str)
        return bool(OVERFLOW_TEXT.search(f"{body} {error.provider_error_code or ''}"))
    return False


@dataclass
class Compaction(AbstractCapability[Any]):
    """Compact inline only when the next request would not fit, and retry once when the provider overflows.

    Threshold compaction ("Compact above") runs after the reply as a job, so users never wait for it.
    State is kept per run id rather than in a per-run copy: `for_run` would cost every turn a re-extraction.
    """

    config: Config
    summary_spec: ModelSpec | None = None
    # Every compaction made during runs, for the notice and the record.
    results: list[CompactionResult] = field(default_factory=list)
    _history: ProcessHistory = field(init=False, repr=False)
    _retried: dict[str | None, int] = field(init=False, default_factory=dict, repr=False)
    _pending: dict[str | None, list[ModelMessage]] = field(init=False, default_factory=dict, repr=False)
    # Runs whose inline compaction failed: the next requests would fail the same way, so it is not retried.
    _gave_up: set[str | None] = field(init=False, default_factory=set, repr=False)
    _overhead: int | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        # The history hook itself is pydantic-ai's: it replaces the request's and the run's messages alike.
        self._history = ProcessHistory(self.shorten_if_needed)

    async def before_model_request(self, ctx: RunContext[Any],
                                   request_context: ModelRequestContext) -> ModelRequestContext:
        limit = request_limit(ctx.model, ctx.model_settings)
        if limit is None:
            return request_context
        if self._overhead is None:  # tool definitions barely change
            self._overhead = _request_overhead(request_context)
        # This runs before every request: one pass over the history, the calibration only near the limit.
        messages, room = request_context.messages, limit - self._overhead
        raw = estimate_tokens(messages, calibrate=False)
        if raw * MAX_RATIO <= room or raw * usage_ratio(messages) <= room:
            return request_context
        return await self._history.before_model_request(ctx, request_context)

    async def shorten_if_needed(self, ctx: RunContext[Any], messages: list[ModelMessage],
                                ) -> list[ModelMessage]:
        """Compact inline only when the request would not fit the context window otherwise."""
        limit, overhead = request_limit(ctx.model, ctx.model_settings), self._overhead or 0
        if limit is None or ctx.run_id in self._gave_up or estimate_tokens(messages) + overhead <= limit:
            return messages
        target = min(threshold_target(self.config), limit - overhead)
        summarizer = self.summarizer(ctx.model)
        result = await compact(messages, self.config, summarizer, target=target)
        if estimate_tokens(result.messages) + overhead > limit:
            again = await compact(result.messages, self.config, summarizer, target=target, aggressive=True,
                                  force_summary=True)
            result = _merge(result, again)
        if result.failed:
            self._gave_up.add(ctx.run_id)
        return self._keep(result, messages)

    async def prepare_model_request(self, ctx: RunContext[Any],
                                    request_context: ModelRequestContext) -> ModelRequestContext:
        # An attempt starts again from the history before the error: the retry must send the shortened one.
        pending = self._pending.pop(ctx.run_id, None)
        if pending is not None:
            request_context.messages = list(pending)
        return request_context

    async def on_model_request_error(self, ctx: RunContext[Any], *, request_context: ModelRequestContext,
                                     error: Exception) -> Any:
        if not is_context_overflow(error) or self._retried.get(ctx.run_id) == ctx.run_step:
            raise error
        self._retried[ctx.run_id] = ctx.run_step  # once per request step
        messages = list(ctx.messages)
        limit = request_limit(ctx.model, ctx.model_settings) or estimate_tokens(messages)
        target = min(threshold_target(self.config), estimate_tokens(messages) // 2, limit)
        result = await compact(messages, self.config, self.summarizer(ctx.model), target=target,
                               aggressive=True, force_summary=True)
        if not result.changed:  # the same request would fail the same way: no retry, and say why
            result.error = result.error or "there was nothing left to clear or summarize"
            self._keep(result, messages)
            error.add_note(f"The conversation could not be made shorter: {result.error}.")
            raise error
        ctx.messages[:] = self._pending[ctx.run_id] = self._keep(result, messages)
        log.info("context overflow: compacted %s → %s tokens, retrying once", result.tokens_before,
                 result.tokens_after)
        raise RetryModelRequest()

    def summarizer(self, run_model: Model) -> Summarizer:
        """Return the summarizer: "Summarize with" / "Summary model" if set, else the run's own model."""
        if self.summary_spec is None:
            return Summarizer(run_model)
        return Summarizer(build_model(self.summary_spec), profile_for(self.summary_spec).settings("summary"))

    def _keep(self, result: CompactionResult, original: list[ModelMessage]) -> list[ModelMessage]:
        if result.changed or result.failed:  # a failure is reported too, never as a shortening
            self.results.append(result)
        return result.messages if result.changed else original


def request_limit(model: Model, settings: Any) -> int | None:
    """Return the largest request that fits the model's context window, leaving room for the answer."""
    window = model.context_window
    if not window:
        return None
    reserve = max((settings or {}).get("max_tokens") or 0, window // 10)
    return max(window - reserve, window // 2)


def _request_overhead(request_context: ModelRequestContext) -> int:
    """Estimate the tokens of the tool definitions and instructions a request carries beside its messages."""
    parameters = request_context.model_request_parameters
    tools = [{"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
             for t in parameters.function_tools]
    instructions = sum(len(part.content) for part in parameters.instruction_parts or ())
    return (len(json.dumps(tools, default=str)) + instructions) // 4


def _merge(first: CompactionResult, second: CompactionResult) -> CompactionResult:
    """Report two passes as one."""
    second.tokens_before = first.tokens_before
    second.cleared_count += first.cleared_count
    second.error = second.error or first.error
    return second


async def compact_conversation_context(
    messages: Sequence[ModelMessage], settings: Config, model_spec: ModelSpec,
    instructions: str | None = None, *, force: bool = False, summarizer: Summarizer | None = None,
) -> CompactionResult:
    """Compact a stored model context after a reply (above "Compact above") or on /compact (`force=True`).

    `model_spec` is the configuration the summary is written with (`summary_spec_for` applies "Summarize
    with" and "Summary model"); `summarizer` replaces it in tests and benchmarks. Run it on the runtime
    loop; a failed summary does not raise but keeps the clearing and sets `error`.
    """
    tokens = estimate_tokens(messages)
    if not force and tokens <= settings.compact_above:
        return CompactionResult(list(messages), tokens_before=tokens, tokens_after=tokens)
    error = None
    if summarizer is None:
        try:
            summarizer = Summarizer(build_model(model_spec), profile_for(model_spec).settings("summary"))
        except ModelUnavailable as unavailable:  # a missing key: clearing alone still helps
            log.warning("compaction cannot build the summary model: %s", unavailable)
            error = f"The summary model is unavailable: {unavailable}"
    result = await compact(messages, settings, summarizer, target=threshold_target(settings),
                           force_summary=force, instructions=instructions)
    result.error = result.error or error
    return result


def summary_spec_for(config: Config, agent_spec: ModelSpec | None) -> ModelSpec | None:
    """Return the configuration summaries are written with (needs an app context).

    Without "Summarize with" it is the agent's own (`agent_spec`; None in a run means the run's model). A
    "Summarize with" configuration that no longer exists falls back to the agent's, with a warning.
    """
    spec = agent_spec
    if config.summarize_with is not None:
        model_config = db.session.get(ModelConfig, config.summarize_with)
        if model_config is None:
            log.warning("compaction: model configuration %s no longer exists; summarizing with the agent's "
                        "model", config.summarize_with)
        else:
            spec = ModelSpec.of(model_config)
    if config.summary_model and spec is not None:
        spec = replace(spec, model_name=config.summary_model)
    return spec


def compaction_config(agent: Agent | None) -> Config | None:
    """Return the agent's compaction settings, or None when it has no compaction skill."""
    for entry in (agent.skills or []) if agent else []:
        if entry.get("name") == skill.name:
            return skill.parse(entry.get("config"))
    return None


def compact_stored_context(conversation: Conversation, trigger: str, instructions: str | None = None,
                           force: bool = False) -> CompactionResult | None:
    """Compact a conversation's stored model context; returns what was done, or None without the skill."""
    config = compaction_config(conversation.agent)
    if config is None:
        return None
    before = conversation.model_context
    messages = load_history(conversation)
    spec = summary_spec_for(config, model_spec_for(conversation.agent, conversation))
    result = run_on_loop(compact_conversation_context(messages, config, spec, instructions, force=force),
                      timeout=spec.timeout * 3 + 30)
    if result.changed:
        after = ModelMessagesTypeAdapter.dump_json(result.messages).decode()
        # Compare-and-swap: a turn that ran meanwhile wins, and this compaction is dropped.
        swapped = db.session.execute(
            db.update(Conversation).where(Conversation.id == conversation.id,
                                          Conversation.model_context == before)
            .values(model_context=after)
        ).rowcount
        if not swapped:
            db.session.rollback()
            log.info("compaction of conversation %s dropped: the context changed meanwhile", conversation.id)
            return result
        record_outcome(conversation.id, config, result, trigger)
    elif result.failed:  # said, never hidden: the context stays as it was
        record_outcome(conversation.id, config, result, trigger)
    db.session.commit()
    log.info("conversation %s compaction (%s): changed=%s failed=%s tokens %s -> %s", conversation.id, trigger,
             result.changed, result.failed, result.tokens_before, result.tokens_after)
    return result


def record_outcome(conversation_id: int, config: Config, result: CompactionResult, trigger: str,
                   run_id: str | None = None) -> Message | None:
    """Add the notice and the record a compaction asks for to the session; the caller commits.

    Returns the notice (None when the skill shows none); `run_id` is the run that compacted, if any.
    """
    notice = None
    if config.show_notice:
        notice = Message(conversation_id=conversation_id, role="notice", content=result.notice(),
                         meta={"compaction": trigger}, run_id=run_id)
        db.session.add(notice)
    if config.keep_record and (result.summarized or result.error):
        removed = ModelMessagesTypeAdapter.dump_json(result.removed).decode() if result.removed else None
        db.session.add(CompactionRecord(
            conversation_id=conversation_id, trigger=trigger, tokens_before=result.tokens_before,
            tokens_after=result.tokens_after, cleared_count=result.cleared_count, summary=result.summary,
            removed=removed, error=result.error))
    return notice


@jobs.task()
def compact_after_reply(conversation_id: int) -> None:
    """Compact a conversation above "Compact above", after a reply, so no user waits for it."""
    conversation = db.session.get(Conversation, conversation_id)
    if conversation is None or conversation.deleted_at is not None or conversation.agent is None:
        return
    compact_stored_context(conversation, "threshold")


def finish_turn(config: Config, end: TurnEnd) -> None:
    """Store the notices and records of the compactions made inside the run (the `finish_turn` hook)."""
    for compactor in end.built:
        for result in compactor.results if isinstance(compactor, Compaction) else ():
            if result.changed or result.failed:
                notice = record_outcome(end.conversation_id, config, result, "run", end.run_id)
                if notice is not None:
                    end.show(notice)


def after_turn(config: Config, end: TurnEnd) -> None:
    """Queue the threshold compaction after a reply (the `after_turn` hook), so no user waits for it."""
    if end.status == "succeeded":
        compact_after_reply.delay(end.conversation_id)


def build(config: Config, ctx: SkillContext) -> Compaction:
    spec = None
    if ctx.app is not None and (config.summarize_with is not None or config.summary_model):
        with ctx.app_context():
            spec = summary_spec_for(config, _agent_spec(ctx))
    return Compaction(config=config, summary_spec=spec)


def _agent_spec(ctx: SkillContext) -> ModelSpec | None:
    agent = db.session.get(Agent, ctx.agent_id) if ctx.agent_id else None
    conversation = db.session.get(Conversation, ctx.conversation_id) if ctx.conversation_id else None
    return model_spec_for(agent, conversation) if agent is not None else None


skill = Skill(name="compaction", title="Compaction", config=Config, build=build, description=__doc__.strip(),
              finish_turn=finish_turn, after_turn=after_turn,
              gives_tools=False)
