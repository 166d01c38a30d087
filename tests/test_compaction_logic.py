"""Compaction on message lists: clearing, the summary, the token estimate, the job entry point."""

from __future__ import annotations

import asyncio

import pydantic_ai.models
import pytest
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from app.runtime.compaction import (
    SUMMARY_HEADER,
    Summarizer,
    clear_tool_results,
    compact,
    is_cleared,
    is_summary_part,
    summaries,
    summarize_middle,
    summary_request_text,
)
from app.runtime.context_size import FILE_TOKENS, estimate_tokens
from app.runtime.model_spec import OFFLINE_SPEC
from app.runtime.offline import SUMMARY_MARKER, make_offline_model
from app.skills.compaction import Config, compact_conversation_context

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 25  # ~2 KB


def session(turns: int, calls_per_turn: int = 2, first: str = "Reconcile the March invoices.") -> list:
    """Build a history: each turn a prompt, tool calls with ~2 KB results naming a record, and an answer."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(first)], instructions="Be precise.")]
    for turn in range(turns):
        if turn:
            messages.append(ModelRequest(parts=[UserPromptPart(f"Now look at batch {turn}.")]))
        for call in range(calls_per_turn):
            call_id = f"call-{turn}-{call}"
            request = ToolCallPart("fetch_record", {"turn": turn, "n": call}, call_id)
            messages.append(ModelResponse(parts=[request]))
            content = f"Record REC-{turn:03d}{call} for file batch_{turn}_{call}.csv. {FILLER}"
            messages.append(ModelRequest(parts=[ToolReturnPart("fetch_record", content, call_id)]))
        messages.append(ModelResponse(parts=[TextPart(f"Batch {turn} checked.")]))
    return messages


def recording_summarizer(seen: list[dict], answer: str = "## Objective\n- reconcile") -> Summarizer:
    """Return a summarizer on a FunctionModel that records what it was given."""
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = next(p.content for p in messages[-1].parts if isinstance(p, UserPromptPart))
        seen.append({"text": prompt, "instructions": info.instructions or ""})
        return ModelResponse(parts=[TextPart(answer)])

    return Summarizer(FunctionModel(respond))


def offline_summarizer() -> Summarizer:
    return Summarizer(make_offline_model())


def failing_summarizer() -> Summarizer:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("the summary model is down")

    return Summarizer(FunctionModel(respond))


def config(**overrides) -> Config:
    values = dict(compact_above=4_000, keep_recent_tool_results=1_000, minimum_worth_clearing=500,
                  keep_recent_messages=1_500, tool_result_size_in_summary=300, total_size_in_summary=20_000)
    return Config(**{**values, **overrides})


def pairs_intact(messages: list[ModelMessage]) -> bool:
    """Every tool result follows the response that made its call, in the very next message."""
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            ids = {p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart)}
            if ids:
                previous = messages[index - 1] if index else None
                made = {p.tool_call_id for p in previous.parts if isinstance(p, ToolCallPart)} if isinstance(
                    previous, ModelResponse) else set()
                if not ids <= made:
                    return False
    return True


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    requests = [m for m in messages if isinstance(m, ModelRequest)]
    return [p for m in requests for p in m.parts if isinstance(p, ToolReturnPart)]


# --- Estimate -------------------------------------------------------------------------------------


def test_estimate_is_characters_over_four_with_files_flat():
    text = ModelRequest(parts=[UserPromptPart("x" * 400)])
    png = BinaryContent(b"\x89PNG" * 10_000, media_type="image/png")
    image = ModelRequest(parts=[UserPromptPart(["look", png])])
    assert estimate_tokens([text]) == 100 + 4
    assert estimate_tokens([image]) == 1 + FILE_TOKENS + 4


def test_estimate_follows_the_usage_the_provider_reported():
    history = session(2)
    raw = estimate_tokens(history, calibrate=False)
    reported = ModelResponse(parts=[TextPart("ok")], usage=RequestUsage(input_tokens=int(raw * 1.5)))
    calibrated = estimate_tokens([*history, reported])
    assert calibrated == pytest.approx(estimate_tokens([*history, reported], calibrate=False) * 1.5, rel=0.01)


# --- Clearing -------------------------------------------------------------------------------------


def test_clearing_keeps_each_call_its_id_and_the_current_turn():
    history = session(3)
    history.append(ModelRequest(parts=[UserPromptPart("And the last batch?")]))
    history.append(ModelResponse(parts=[ToolCallPart("fetch_record", {"n": 9}, "now")]))
    history.append(ModelRequest(parts=[ToolReturnPart("fetch_record", "Record REC-999 " + FILLER, "now")]))

    cleared, count, freed = clear_tool_results(history, keep_recent_tokens=0, minimum_worth_clearing=1)

    assert count == 6 and freed > 6 * 400
    assert len(cleared) == len(history)
    assert [p.tool_call_id for p in returns(cleared)] == [p.tool_call_id for p in returns(history)]
    first = returns(cleared)[0]
    assert first.content.startswith("[cleared to save space — call fetch_record again if you need it")
    assert "REC-0000" in first.content  # the note names what the result was about
    assert returns(cleared)[-1].content.startswith("Record REC-999")  # the current turn is never cleared
    responses = [m for m in history if isinstance(m, ModelResponse)]
    assert [m for m in cleared if isinstance(m, ModelResponse)] == responses


def test_clearing_keeps_the_newest_tool_output():
    history = session(4)
    cleared, count, _ = clear_tool_results(history, keep_recent_tokens=1_200, minimum_worth_clearing=1,
                                           protect_current_turn=False)
    flags = [is_cleared(p) for p in returns(cleared)]
    assert flags == [True] * 6 + [False] * 2  # two ~530-token results fit in 1,200
    assert count == 6


def test_minimum_worth_clearing_is_respected():
    history = session(2)
    unchanged, count, freed = clear_tool_results(history, 0, minimum_worth_clearing=100_000)
    assert (count, freed) == (0, 0)
    assert all(a is b for a, b in zip(unchanged, history, strict=True))
    _, count, freed = clear_tool_results(history, 0, minimum_worth_clearing=900)
    assert count == 2 and freed >= 900


# --- Summary --------------------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 100, 500, 900, 1_500, 2_500, 4_000])
def test_summary_keeps_first_message_and_tail_verbatim_and_never_splits_a_call(keep):
    history = session(5)
    result = asyncio.run(summarize_middle(history, recording_summarizer([]), keep, 300, 20_000))

    assert result.summarized
    out = result.messages
    # The first message, word for word, with the summary after it (in the same request).
    assert out[0].parts[:-1] == list(history[0].parts) and out[0].instructions == history[0].instructions
    assert is_summary_part(out[0].parts[-1]) and out[0].parts[-1].content.startswith(SUMMARY_HEADER)
    tail = out[1:]
    assert isinstance(tail[0], ModelResponse)
    assert all(a is b for a, b in zip(tail, history[-len(tail):], strict=True))
    assert pairs_intact(out)
    assert result.removed == history[1:len(history) - len(tail)]


def test_only_one_summary_and_the_next_compaction_rewrites_it():
    seen: list[dict] = []
    summarizer = recording_summarizer(seen, "## Identifiers\n- ORD-42")
    first = asyncio.run(summarize_middle(session(4), summarizer, 600, 300, 20_000))
    # The next run cleans the stored history (merging adjacent requests) and adds turns.
    grown = repair_messages([*first.messages, *session(4, first="Next batch.")])
    summarizer = recording_summarizer(seen, "## Identifiers\n- ORD-42, ORD-43")
    second = asyncio.run(summarize_middle(grown, summarizer, 600, 300, 20_000))
    stored = repair_messages(second.messages)

    assert summaries(stored) == ["## Identifiers\n- ORD-42, ORD-43"]
    assert stored[0].parts[0].content == "Reconcile the March invoices."
    assert "The earlier summary" in seen[1]["text"] and "ORD-42" in seen[1]["text"]
    assert SUMMARY_HEADER not in seen[1]["text"]
    assert seen[1]["text"].count("Reconcile the March invoices.") == 1  # as the objective, not a message


def test_identifiers_from_tool_results_reach_the_offline_summary():
    history = session(4)
    # An identifier far into a result, beyond what the summarizer is shown of it.
    late = returns(history)[2]
    late.content = f"{FILLER} The signed contract is at https://files.example.org/contract-77.pdf"
    settings = config(keep_recent_tool_results=0, minimum_worth_clearing=0, keep_recent_messages=600,
                      tool_result_size_in_summary=200)
    result = asyncio.run(compact(history, settings, offline_summarizer(), target=1_000))

    assert result.cleared_count and result.summarized
    [summary] = summaries(result.messages)
    identifiers = summary.split("## Identifiers")[1]
    for record in ("REC-0000", "REC-0001", "REC-0011", "REC-0020"):
        assert record in identifiers
    assert "https://files.example.org/contract-77.pdf" in identifiers
    assert "batch_0_0.csv" in identifiers


def test_compact_instructions_and_summary_instructions_reach_the_summarizer():
    seen: list[dict] = []
    settings = config(summary_instructions="Never lose a record id.", keep_recent_messages=200)
    asyncio.run(compact(session(3), settings, recording_summarizer(seen), target=100_000, force_summary=True,
                        instructions="keep every invoice number"))

    assert len(seen) == 1
    assert SUMMARY_MARKER in seen[0]["instructions"]
    assert "keep every invoice number" in seen[0]["instructions"]
    assert "Never lose a record id." in seen[0]["instructions"]
    for heading in ("Objective", "Done so far", "Decisions", "Left to do", "Identifiers"):
        assert f"## {heading}" in seen[0]["instructions"]


def test_summarizer_sees_results_cut_and_the_whole_within_its_size():
    history = session(6)
    text = summary_request_text(history[0], history[1:], tool_result_chars=300, total_chars=3_000)
    assert len(text) <= 3_000
    assert "… [cut short" in text
    assert text.count("Tool fetch_record returned:") == 12  # every result is represented, however briefly


def test_a_failing_summarizer_keeps_the_clearing_and_does_not_raise():
    history = session(4)
    settings = config(keep_recent_messages=200)
    result = asyncio.run(compact(history, settings, failing_summarizer(), target=100, force_summary=True))

    assert result.error and "the summary model is down" in result.error
    assert result.cleared_count > 0 and not result.summarized
    assert len(result.messages) == len(history)
    assert result.tokens_after < result.tokens_before
    assert "summary could not be used" in result.notice()


def test_how_to_shorten_clear_never_summarizes():
    seen: list[dict] = []
    settings = config(how_to_shorten="clear")
    summarizer = recording_summarizer(seen)
    result = asyncio.run(compact(session(4), settings, summarizer, target=10, force_summary=True))
    assert result.cleared_count and not result.summarized and not seen


def test_summarize_only_keeps_tool_results():
    settings = config(how_to_shorten="summarize")
    result = asyncio.run(compact(session(4), settings, offline_summarizer(), target=10))
    assert result.summarized and result.cleared_count == 0
    assert not any(is_cleared(p) for p in returns(result.messages))


# --- The job entry point --------------------------------------------------------------------------


def test_job_compacts_only_above_the_threshold_and_slash_compact_always():
    small = session(1)
    untouched = asyncio.run(compact_conversation_context(small, config(), OFFLINE_SPEC))
    assert not untouched.changed and untouched.messages == small

    big = session(6)
    settings = config()
    result = asyncio.run(compact_conversation_context(big, settings, OFFLINE_SPEC))
    assert result.changed and result.tokens_after < settings.compact_above

    settings = config(keep_recent_messages=200)
    forced = asyncio.run(compact_conversation_context(session(3), settings, OFFLINE_SPEC,
                                                      "keep every invoice number", force=True))
    assert forced.summarized and "summarized" in forced.notice()


def test_compaction_does_not_trigger_itself_again_from_stale_usage():
    history = session(6)
    history[-1].usage = RequestUsage(input_tokens=estimate_tokens(history[:-1], calibrate=False))
    result = asyncio.run(compact_conversation_context(history, config(), OFFLINE_SPEC))
    assert result.changed
    again = asyncio.run(compact_conversation_context(result.messages, config(), OFFLINE_SPEC))
    assert not again.changed


def test_identifiers_beyond_the_cut_of_an_uncleared_result_still_reach_the_summary():
    history = session(4)
    returns(history)[2].content = f"{FILLER} Signed copy: https://files.example.org/contract-77.pdf"
    settings = config(how_to_shorten="summarize", keep_recent_messages=600, tool_result_size_in_summary=200)
    result = asyncio.run(compact(history, settings, offline_summarizer(), target=1_000))

    assert result.summarized and not result.cleared_count
    assert "https://files.example.org/contract-77.pdf" in result.summary.split("## Identifiers")[1]


def test_parallel_calls_stay_with_their_results_and_the_context_round_trips():
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Compare the suppliers.")])]
    for turn in range(6):
        calls = [ToolCallPart("fetch_record", {"n": n}, f"p{turn}-{n}") for n in range(3)]
        history.append(ModelResponse(parts=[TextPart("Looking."), *calls]))
        results = [ToolReturnPart("fetch_record", f"SUP-{turn}{n} {FILLER}", call.tool_call_id)
                   for n, call in enumerate(calls)]
        history.append(ModelRequest(parts=results))
    history.append(ModelResponse(parts=[TextPart("Done.")]))
    for keep in range(0, 6_000, 250):
        settings = config(compact_above=10_000, keep_recent_messages=keep)
        result = asyncio.run(compact(history, settings, offline_summarizer(), target=0))
        assert pairs_intact(result.messages), keep
    stored = ModelMessagesTypeAdapter.dump_json(result.messages)
    assert ModelMessagesTypeAdapter.validate_json(stored) == result.messages


# --- A compaction must make the context smaller -------------------------------------------------------

WORDY = "## Objective\n- " + "an overlong summary that says far more than the messages it replaces " * 400


def chatter(turns: int) -> list[ModelMessage]:
    """A history of short prompts and answers, nothing to clear: only a summary could shorten it."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Plan the March release.")])]
    for turn in range(turns):
        if turn:
            messages.append(ModelRequest(parts=[UserPromptPart(f"And step {turn}?")]))
        messages.append(ModelResponse(parts=[TextPart(f"Step {turn} is planned.")]))
    return messages


def test_a_summary_that_grows_the_context_is_a_failure_and_changes_nothing():
    history = chatter(30)
    result = asyncio.run(compact(history, config(keep_recent_messages=50), recording_summarizer([], WORDY),
                                 target=10, force_summary=True))

    assert not result.changed and result.failed
    assert result.messages == history
    assert result.tokens_after == result.tokens_before == estimate_tokens(history)
    assert "not shorter" in result.error
    assert "shortened" not in result.notice() and "could not be made shorter" in result.notice()


def test_a_summary_that_grows_keeps_the_clearing_that_shrank():
    history = session(4)
    result = asyncio.run(compact(history, config(keep_recent_messages=200), recording_summarizer([], WORDY * 3),
                                 target=10, force_summary=True))

    assert result.changed and result.cleared_count and not result.summarized and not result.failed
    assert result.tokens_after < result.tokens_before
    assert not summaries(result.messages)
    assert "not shorter" in result.error and "only old tool results were cleared" in result.notice()


def test_the_job_entry_point_reports_a_growing_summary_as_a_failure():
    history = chatter(30)
    result = asyncio.run(compact_conversation_context(
        history, config(keep_recent_messages=50), OFFLINE_SPEC, force=True,
        summarizer=recording_summarizer([], WORDY)))
    assert result.failed and result.messages == history
