"""The Compaction skill: its settings form, and the capability inside real pydantic-ai runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic_ai.models
import pytest
from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelContextWindowExceededError, ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from app.runtime.compaction import is_cleared, summaries
from app.runtime.context_size import estimate_tokens
from app.runtime.model_spec import OFFLINE_SPEC
from app.runtime.offline import SUMMARY_MARKER, extractive_summary
from app.runtime.skill import SkillContext
from app.skills.compaction import Compaction, Config, is_context_overflow, skill

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

SEED_LABELS = [
    "Compact above", "How to shorten", "Keep recent tool results", "Minimum worth clearing",
    "Keep recent messages",
    "Summary instructions", "Summarize with", "Summary model", "Tool result size in summary",
    "Total size in summary", "Allow /compact", "Show a notice", "Keep a record",
]
SETTINGS = {"compact_above": 3_000, "keep_recent_tool_results": 500, "minimum_worth_clearing": 200,
            "keep_recent_messages": 800, "tool_result_size_in_summary": 300, "total_size_in_summary": 20_000}
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 25
LLAMA_CPP_BODY = {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 40_211,
                            "n_ctx": 32_768, "message": "the request exceeds the available context size, try "
                                                        "increasing it"}}


def history(turns: int = 6) -> list[ModelMessage]:
    """A past conversation of record lookups, each result ~2 KB naming its record."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Audit the records of ACME.")])]
    for turn in range(turns):
        if turn:
            messages.append(ModelRequest(parts=[UserPromptPart(f"Next record {turn}.")]))
        messages.append(ModelResponse(parts=[ToolCallPart("fetch_record", {"n": turn}, f"call-{turn}")]))
        messages.append(ModelRequest(parts=[ToolReturnPart("fetch_record", f"Record REC-{turn:04d}. {FILLER}",
                                                           f"call-{turn}")]))
        messages.append(ModelResponse(parts=[TextPart(f"Record {turn} is fine.")]))
    return messages


class Script:
    """A FunctionModel that answers summaries extractively, fails chosen requests, and records what it saw."""

    def __init__(self, fail_with: Exception | None = None, fail_times: int = 1, summary_fails: bool = False,
                 context_window: int = 200_000, summary: str | None = None) -> None:
        self.fail_with, self.fail_times, self.summary_fails = fail_with, fail_times, summary_fails
        self.summary = summary  # a fixed summary instead of the extractive one
        self.requests: list[list[ModelMessage]] = []
        self.summaries: list[str] = []
        self.model = FunctionModel(self.respond, stream_function=self.stream,
                                   profile={"context_window": context_window})

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.instructions and SUMMARY_MARKER in info.instructions:
            if self.summary_fails:
                raise RuntimeError("the summary model is down")
            self.summaries.append(info.instructions)
            return ModelResponse(parts=[TextPart(self.summary or extractive_summary(messages[-1].parts[0].content))])
        self.requests.append(list(messages))
        if self.fail_with is not None and len(self.requests) <= self.fail_times:
            raise self.fail_with
        return ModelResponse(parts=[TextPart("All records audited.")])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo):
        yield self.respond(messages, info).parts[0].content


def chatter(turns: int) -> list[ModelMessage]:
    """A past conversation of short prompts and answers: nothing to clear, only a summary could shorten it."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Audit the records of ACME.")])]
    for turn in range(turns):
        if turn:
            messages.append(ModelRequest(parts=[UserPromptPart(f"And record {turn}?")]))
        messages.append(ModelResponse(parts=[TextPart(f"Record {turn} is fine.")]))
    return messages


# A summary far longer than the conversation it would replace.
WORDY = "## Objective\n- " + "a summary that says much more than the messages it replaces " * 300


def run(agent: Agent, past: list[ModelMessage], prompt: str = "Which records failed?") -> Any:
    """Run one turn (asyncio.run, not run_sync, which leaves its event loop open)."""
    return asyncio.run(agent.run(prompt, message_history=past))


def agent_with(script: Script, settings: dict | None = None) -> tuple[Agent, Compaction]:
    built = skill.built(settings if settings is not None else SETTINGS, SkillContext(app=None, user_id=1,
                                                                                      agent_id=1))
    assert len(built) == 1 and isinstance(built[0], Compaction)
    return Agent(script.model, capabilities=built), built[0]


# --- Settings -------------------------------------------------------------------------------------


def test_the_settings_form_is_the_seed_table_with_a_description_per_field():
    schema = Config.model_json_schema()["properties"]
    assert [prop["title"] for prop in schema.values()] == SEED_LABELS
    assert all(prop.get("description") for prop in schema.values())
    defaults = Config()
    assert (defaults.compact_above, defaults.how_to_shorten) == (100_000, "both")
    assert defaults.allow_compact and defaults.show_notice and not defaults.keep_record


def test_settings_refuse_keeping_more_than_the_threshold_and_unknown_keys():
    with pytest.raises(ValidationError, match="below Compact above"):
        Config(compact_above=10_000, keep_recent_messages=10_000)
    with pytest.raises(ValidationError):
        Config(how_to_shorten="truncate")
    with pytest.raises(ValidationError):
        Config(surprise=True)


def test_overflow_answers_are_recognized():
    def http(status: int, body: object) -> ModelHTTPError:
        return ModelHTTPError(status, "local-model", body)

    assert is_context_overflow(ModelHTTPError.for_category(ModelContextWindowExceededError, status_code=400,
                                                           model_name="gpt"))
    assert is_context_overflow(http(400, LLAMA_CPP_BODY))
    ollama = {"error": "prompt too long; exceeded max context length by 812 tokens"}
    assert is_context_overflow(http(400, ollama))
    assert is_context_overflow(http(400, "This model's maximum context length is 8192 tokens"))
    assert not is_context_overflow(http(400, {"error": "invalid tool schema"}))
    assert not is_context_overflow(http(500, "context length"))
    assert not is_context_overflow(RuntimeError("context length"))


# --- In a run -------------------------------------------------------------------------------------


@pytest.mark.parametrize("error", [
    ModelHTTPError.for_category(ModelContextWindowExceededError, status_code=400, model_name="gpt"),
    ModelHTTPError(400, "llama.cpp", LLAMA_CPP_BODY),
], ids=["classified", "llama.cpp"])
def test_overflow_compacts_and_retries_exactly_once(error):
    script = Script(fail_with=error)
    agent, capability = agent_with(script)

    result = run(agent, history(40))

    assert result.output == "All records audited."
    assert len(script.requests) == 2  # the rejected request and one retry
    assert estimate_tokens(script.requests[1]) < estimate_tokens(script.requests[0]) // 2
    assert len(script.summaries) == 1 and len(capability.results) == 1
    sent = script.requests[1]
    assert sent[0].parts[0].content == "Audit the records of ACME."  # the first message, verbatim
    assert len(summaries(sent)) == 1
    assert sent[-1].parts[-1].content == "Which records failed?"
    assert len(summaries(result.all_messages())) == 1  # the stored context is the shortened one


def test_a_second_overflow_is_not_retried_again():
    script = Script(fail_with=ModelHTTPError(400, "ollama", {"error": "prompt too long"}), fail_times=5)
    agent, _ = agent_with(script)

    with pytest.raises(ModelHTTPError):
        run(agent, history())
    assert len(script.requests) == 2


def test_other_errors_are_not_compacted():
    script = Script(fail_with=ModelHTTPError(400, "gpt", {"error": {"message": "invalid tool schema"}}))
    agent, capability = agent_with(script)

    with pytest.raises(ModelHTTPError):
        run(agent, history())
    assert len(script.requests) == 1 and not capability.results and not script.summaries


def test_overflow_while_streaming_retries_once():
    script = Script(fail_with=ModelContextWindowExceededError("gpt", "context_length_exceeded"))
    agent, _ = agent_with(script)

    async def run() -> str:
        async with agent.run_stream_events("Which records failed?", message_history=history()) as stream:
            async for event in stream:
                last = event
        return last.result.output

    assert asyncio.run(run()) == "All records audited."
    assert len(script.requests) == 2


def test_nothing_happens_inline_while_the_request_fits_the_window():
    script = Script(context_window=200_000)
    # Compact above is 3,000, but that is the job's threshold, not the run's.
    agent, capability = agent_with(script)

    run(agent, history())

    assert not capability.results
    assert len(script.requests[0]) == len(history()) + 1


def test_a_request_that_would_not_fit_is_compacted_before_it_is_sent():
    script = Script(context_window=3_000)
    agent, capability = agent_with(script)

    run(agent, history())

    assert len(script.requests) == 1  # no error, no retry
    assert estimate_tokens(script.requests[0]) < 2_700
    assert capability.results and capability.results[0].cleared_count


def test_a_failing_summarizer_leaves_the_clearing_and_the_run_going():
    script = Script(summary_fails=True, context_window=3_000)
    agent, capability = agent_with(script, {**SETTINGS, "keep_recent_tool_results": 0})

    # Sixty turns: even with every old result cleared the request is too large, so a summary is tried.
    result = run(agent, history(60))

    assert result.output == "All records audited."
    sent = script.requests[0]
    assert not summaries(sent)
    assert any(is_cleared(p) for m in sent if isinstance(m, ModelRequest) for p in m.parts)
    assert capability.results[0].error and "summary model is down" in capability.results[0].error


def test_summarize_with_another_configuration_leaves_the_chat_model_alone():
    script = Script(fail_with=ModelContextWindowExceededError("gpt", "context_length_exceeded"))
    capability = Compaction(config=Config(**SETTINGS), summary_spec=OFFLINE_SPEC)
    agent = Agent(script.model, capabilities=[capability])

    run(agent, history(40))

    assert not script.summaries  # the offline configuration wrote it
    assert capability.results[0].summarized and "(Offline model)" in capability.results[0].summary


def test_an_overflow_compaction_that_does_not_shrink_fails_the_run_without_a_retry():
    script = Script(fail_with=ModelHTTPError(400, "llama.cpp", LLAMA_CPP_BODY), summary=WORDY)
    agent, capability = agent_with(script)

    with pytest.raises(ModelHTTPError) as raised:
        run(agent, chatter(40))

    assert len(script.requests) == 1 and len(script.summaries) == 1  # a summary was tried, no retry
    assert any("could not be made shorter" in note for note in raised.value.__notes__)
    [result] = capability.results
    assert result.failed and not result.changed
    assert "shortened" not in result.notice()


def test_an_inline_compaction_that_would_grow_sends_the_request_as_it_was():
    script = Script(context_window=1_000, summary=WORDY)
    agent, capability = agent_with(script)
    past = chatter(80)

    run(agent, past)

    assert len(script.requests) == 1 and script.summaries
    assert len(script.requests[0]) == len(past) + 1 and not summaries(script.requests[0])
    assert capability.results and all(r.failed for r in capability.results)
    assert all("shortened" not in r.notice() for r in capability.results)


def test_a_run_whose_inline_compaction_failed_does_not_try_again_at_every_step():
    summaries_written: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.instructions and SUMMARY_MARKER in info.instructions:
            summaries_written.append(info.instructions)
            return ModelResponse(parts=[TextPart(WORDY)])
        steps = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
        if steps < 3:
            return ModelResponse(parts=[ToolCallPart("look", {}, f"call-{steps}")])
        return ModelResponse(parts=[TextPart("Done.")])

    capability = skill.built(SETTINGS, SkillContext(app=None, user_id=1, agent_id=1))[0]
    agent = Agent(FunctionModel(respond, profile={"context_window": 1_000}), capabilities=[capability])
    agent.tool_plain(lambda: "nothing new", name="look")

    assert run(agent, chatter(200)).output == "Done."
    # One attempt (its normal and its aggressive pass) before the first request, none at the next three.
    assert len(summaries_written) == 2 and len(capability.results) == 1 and capability.results[0].failed
