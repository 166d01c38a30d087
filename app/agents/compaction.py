"""Compaction: shorten what the model is given, cheapest first, so a long conversation keeps fitting.

Two steps, both pure transformations of a pydantic-ai message list: clear old tool results (free),
then replace the middle of the conversation with one summary written by a model. The transcript the
user sees is stored elsewhere and is never touched here.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import (
    MULTI_MODAL_CONTENT_TYPES,
    BaseToolCallPart,
    BaseToolReturnPart,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextContent,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from app.agents.offline import MODEL_NAME as OFFLINE_MODEL_NAME
from app.agents.offline import SUMMARY_HEADINGS, SUMMARY_MARKER
from app.agents.providers import ModelSpec, ModelUnavailable, build_model

log = logging.getLogger(__name__)

SUMMARY_HEADER = "[Summary of the earlier conversation]"
CLEARED_PREFIX = "[cleared to save space"
FILE_TOKENS = 1_000  # images and files: providers bill them by size, not by characters
MESSAGE_TOKENS = 4  # role markers and separators around each message
# Threshold compaction aims below this share of "Compact above", so the next turn does not trigger it again.
TARGET_SHARE = 0.8
# The provider's usage may scale the estimate by 1/MAX_RATIO to MAX_RATIO, no further.
MAX_RATIO = 2.0
# Stamped on responses kept across a compaction: their reported usage measured a history that is gone.
USAGE_KEY = "skilldesk_compaction"
IDENTIFIER = re.compile(
    r"https?://[^\s\"'<>)\]]+"  # URLs
    r"|\b[\w.-]+\.(?:pdf|csv|tsv|txt|json|md|xlsx?|docx?|pptx?|png|jpe?g|gif|zip|py|js|ts|html?|xml|ya?ml)\b"
    r"|\b[A-Z]{2,}[-_]?\d[\w-]*\b"  # codes such as INV-2024-001, ORD42
    r"|#\d+\b"  # record references
    r"|\b\d{3,}\b"  # numbers of 3+ digits
)


class Settings(Protocol):
    """The compaction settings; the skill's Config provides them."""

    compact_above: int
    how_to_shorten: str
    keep_recent_tool_results: int
    minimum_worth_clearing: int
    keep_recent_messages: int
    summary_instructions: str
    tool_result_size_in_summary: int
    total_size_in_summary: int


@dataclass
class CompactionResult:
    """What one compaction did; `messages` is the history to use from now on."""

    messages: list[ModelMessage]
    cleared_count: int = 0
    summarized: bool = False
    removed_messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    error: str | None = None
    summary: str | None = None
    # The messages the summary replaced, as they were, for "Keep a record".
    removed: list[ModelMessage] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.cleared_count or self.summarized)

    def notice(self) -> str:
        """Say in one sentence what was shortened, for the note in the chat."""
        done = []
        if self.cleared_count:
            done.append(f"{self.cleared_count} old tool result{'s' * (self.cleared_count != 1)} cleared")
        if self.summarized:
            done.append(f"{self.removed_messages} earlier messages summarized")
        text = "The conversation was shortened for the model"
        text += f" ({', '.join(done)}; about {self.tokens_before:,} → {self.tokens_after:,} tokens)." if done else "."
        if self.error:
            text += " The summary could not be written, so only old tool results were cleared."
        return text


# --- Token estimate -------------------------------------------------------------------------------


def estimate_tokens(messages: Sequence[ModelMessage], calibrate: bool = True) -> int:
    """Estimate the tokens of a history: characters ÷ 4, files flat, scaled by the provider's last usage."""
    raw = sum(_message_tokens(message) for message in messages) + _instruction_tokens(messages)
    return math.ceil(raw * usage_ratio(messages)) if calibrate else raw


def usage_ratio(messages: Sequence[ModelMessage]) -> float:
    """Return reported ÷ estimated tokens for the last response that reported usage (1.0 when unknown)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, ModelResponse):
            continue
        stamp = (message.metadata or {}).get(USAGE_KEY)
        if isinstance(stamp, dict):
            return float(stamp.get("ratio", 1.0))
        # The offline model reports FunctionModel's guess (words of the requests only), not a count.
        if not message.usage.input_tokens or message.model_name == OFFLINE_MODEL_NAME:
            continue
        estimated = estimate_tokens(messages[:index], calibrate=False)
        # Below a few hundred tokens the tool definitions dominate the count and the ratio means nothing.
        if estimated < 500:
            return 1.0
        return min(MAX_RATIO, max(1 / MAX_RATIO, message.usage.input_tokens / estimated))
    return 1.0


def _message_tokens(message: ModelMessage) -> int:
    return MESSAGE_TOKENS + sum(_part_tokens(part) for part in message.parts)


def _part_tokens(part: Any) -> int:
    if isinstance(part, BaseToolReturnPart):
        return _chars(part.model_response_str()) + FILE_TOKENS * len(part.files)
    if isinstance(part, BaseToolCallPart):
        return _chars(part.tool_name) + _chars(part.args_as_json_str())
    if isinstance(part, FilePart):
        return FILE_TOKENS
    return _content_tokens(getattr(part, "content", None))


def _content_tokens(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return _chars(content)
    if isinstance(content, TextContent):
        return _chars(content.content)
    if isinstance(content, MULTI_MODAL_CONTENT_TYPES):
        return FILE_TOKENS
    if isinstance(content, list | tuple):
        return sum(_content_tokens(item) for item in content)
    return _chars(json.dumps(content, default=str))


def _instruction_tokens(messages: Sequence[ModelMessage]) -> int:
    # Only the latest instructions are sent; older requests merely record theirs.
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and message.instructions:
            return _chars(message.instructions)
    return 0


def _chars(text: str) -> int:
    return math.ceil(len(text) / 4)


def _mark_usage_stale(messages: list[ModelMessage], ratio: float) -> list[ModelMessage]:
    """Stamp kept responses so their old usage no longer calibrates the estimate; keep the ratio it gave."""
    stamp = {USAGE_KEY: {"ratio": round(ratio, 4)}}
    return [replace(m, metadata={**(m.metadata or {}), **stamp}) if isinstance(m, ModelResponse) else m
            for m in messages]


# --- Structure ------------------------------------------------------------------------------------


def is_summary(message: ModelMessage) -> bool:
    """Tell whether a message is the compaction summary."""
    return isinstance(message, ModelRequest) and any(
        isinstance(part, UserPromptPart) and isinstance(part.content, str) and part.content.startswith(SUMMARY_HEADER)
        for part in message.parts
    )


def current_turn_start(messages: Sequence[ModelMessage]) -> int:
    """Return the index of the latest user prompt (not the summary): the turn the agent works on now."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and not is_summary(message) and any(
                isinstance(part, UserPromptPart) for part in message.parts):
            return index
    return 0


def _answers_calls(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and any(isinstance(p, BaseToolReturnPart) for p in message.parts)


def mentioned(text: str, limit: int = 12, exclude: str = "") -> list[str]:
    """Return the identifiers a text mentions (not those in `exclude`): codes, files and URLs before numbers."""
    # A sentence's full stop is not part of a URL or a code.
    found = [m for m in dict.fromkeys(m.rstrip(".,;:!?") for m in IDENTIFIER.findall(text)) if m not in exclude]
    found.sort(key=lambda m: m.isdigit())  # stable: order of appearance within each kind
    return found[:limit]


# --- Step 1: clear old tool results ---------------------------------------------------------------


def cleared_note(part: ToolReturnPart) -> str:
    """Return the note that replaces a cleared tool result, naming what it mentioned."""
    ids = mentioned(part.model_response_str())
    # The identifiers are a few tokens and let a later summary (and the agent) know what the result was about.
    also = f"; it mentioned {', '.join(ids)}" if ids else ""
    return f"{CLEARED_PREFIX} — call {part.tool_name} again if you need it{also}]"


def is_cleared(part: Any) -> bool:
    """Tell whether a tool result was already cleared."""
    return isinstance(part, ToolReturnPart) and isinstance(part.content, str) and part.content.startswith(
        CLEARED_PREFIX)


def clear_tool_results(messages: Sequence[ModelMessage], keep_recent_tokens: int, minimum_worth_clearing: int,
                       protect_current_turn: bool = True) -> tuple[list[ModelMessage], int, int]:
    """Replace old tool results by a note; return (messages, how many were cleared, tokens freed).

    The newest `keep_recent_tokens` of tool output and the results of the current turn are kept, and
    nothing changes unless clearing frees at least `minimum_worth_clearing` tokens.
    """
    protected_from = current_turn_start(messages) if protect_current_turn else len(messages)
    kept = 0
    targets: dict[tuple[int, int], str] = {}
    freed = 0
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, ModelRequest):
            continue
        for j in range(len(message.parts) - 1, -1, -1):
            part = message.parts[j]
            # Typed returns (tool search, capability loads) carry state pydantic-ai reads back: leave them.
            if type(part) is not ToolReturnPart or is_cleared(part):
                continue
            tokens = _part_tokens(part)
            kept += tokens
            if i >= protected_from or (kept <= keep_recent_tokens and not targets):
                continue
            note = cleared_note(part)
            targets[(i, j)] = note
            freed += tokens - _chars(note)
    if not targets or freed < max(minimum_worth_clearing, 1):
        return list(messages), 0, 0
    out: list[ModelMessage] = []
    for i, message in enumerate(messages):
        if isinstance(message, ModelRequest) and any((i, j) in targets for j in range(len(message.parts))):
            parts = [replace(p, content=targets[(i, j)]) if (i, j) in targets else p
                     for j, p in enumerate(message.parts)]
            message = replace(message, parts=parts)
        out.append(message)
    return out, len(targets), freed


# --- Step 2: summarize the middle -----------------------------------------------------------------


@dataclass
class Summarizer:
    """Writes summaries with a pydantic-ai Agent on the given model."""

    model: Model
    settings: ModelSettings | None = None

    async def __call__(self, text: str, instructions: str) -> str:
        agent = PydanticAgent(self.model, instructions=instructions, output_type=str, name="summarizer")
        result = await agent.run(text, model_settings=self.settings)
        return result.output


def summarizer_instructions(summary_instructions: str = "", instructions: str | None = None) -> str:
    """Return the summarizer's instructions: the marker, the fixed headings, the agent's and the user's wishes."""
    headings = ", ".join(f"## {h}" for h in SUMMARY_HEADINGS)
    lines = [
        SUMMARY_MARKER,
        "You write the summary that replaces the earlier part of a conversation between a user and an AI "
        "agent. The agent continues from your summary alone, so keep what it needs to carry on the work.",
        f"Write under exactly these headings, in this order: {headings}.",
        "Objective: what the user wants. Done so far: what has been done and found. Decisions: what was "
        "decided and agreed. Left to do: what remains.",
        "Identifiers: list every identifier that came up - record ids, file names, URLs, numbers the user "
        "gave - exactly as written. Never drop one.",
        "If an earlier summary is given, rewrite it: carry over what still holds, update what changed.",
        "Tool results may be cut short or cleared; never invent what they said.",
    ]
    if summary_instructions.strip():
        lines.append(f"Always pay attention to this: {summary_instructions.strip()}")
    if instructions and instructions.strip():
        lines.append(f"The user asked for this summary with these instructions: {instructions.strip()}")
    return "\n".join(lines)


def summary_request_text(first: ModelMessage, middle: Sequence[ModelMessage], tool_result_chars: int,
                         total_chars: int) -> str:
    """Return the text handed to the summarizer: each tool result cut, the whole within `total_chars`."""
    prior = [_prompt_text(m).removeprefix(SUMMARY_HEADER).strip() for m in middle if is_summary(m)]
    head = [f"The conversation began with this request from the user: {_cut(_prompt_text(first), 1_000)}"]
    if prior:
        head.append("The earlier summary, to rewrite (carry over what still holds):\n" + "\n".join(prior))
    head.append("The conversation since then:")
    items = [line for m in middle if not is_summary(m) for line in _lines(m, tool_result_chars)]
    fixed = "\n\n".join(head)
    if len(fixed) > total_chars // 2:  # an oversized earlier summary must not crowd out the new messages
        fixed = _cut(fixed, total_chars // 2)
    items = _fit(items, total_chars - len(fixed) - 2 - len(items))
    return (fixed + "\n\n" + "\n".join(items))[:total_chars]


def _lines(message: ModelMessage, tool_result_chars: int) -> list[str]:
    lines = []
    for part in message.parts:
        if isinstance(part, BaseToolReturnPart):
            text = _cut(part.model_response_str(), tool_result_chars)
            lines.append(f"Tool {part.tool_name} returned: {text}")
        elif isinstance(part, BaseToolCallPart):
            lines.append(f"Assistant called {part.tool_name}({part.args_as_json_str()}).")
        elif isinstance(part, UserPromptPart):
            lines.append(f"User: {_prompt_text(part)}")
        elif isinstance(part, TextPart) and part.content.strip():
            lines.append(f"Assistant: {part.content.strip()}")
    return lines


def _prompt_text(item: ModelMessage | UserPromptPart) -> str:
    parts = item.parts if isinstance(item, ModelRequest | ModelResponse) else [item]
    texts = []
    for part in parts:
        if isinstance(part, UserPromptPart):
            for c in [part.content] if isinstance(part.content, str) else part.content:
                texts.append(c if isinstance(c, str) else c.content if isinstance(c, TextContent) else "[file]")
    return "\n".join(texts)


def _cut(text: str, limit: int) -> str:
    """Cut text to about `limit` characters, naming the identifiers the cut-off part mentioned."""
    if len(text) <= limit:
        return text
    if limit < 60:
        return text[:max(limit, 0)]
    head_size = limit
    for _ in range(3):  # the note takes room from the head, which may move identifiers into the note
        head = text[:head_size]
        ids = mentioned(text[head_size:], limit=20, exclude=head)
        note = f"… [{len(text) - head_size} characters cut" + (f"; it also mentioned: {', '.join(ids)}]" if ids
                                                               else "]")
        if head_size + len(note) <= limit or head_size <= limit // 2:
            break
        head_size = max(limit - len(note), limit // 2)
    return head + note


def _fit(items: list[str], budget: int) -> list[str]:
    """Cut the longest items to an equal share until all fit in `budget` characters."""
    if sum(map(len, items)) <= budget:
        return items
    share, remaining = 0, max(budget, 0)
    for count, length in enumerate(sorted(map(len, items))):
        equal = remaining // (len(items) - count)
        if length > equal:
            share = equal
            break
        remaining -= length
    return [_cut(item, share) if len(item) > share else item for item in items]


def tail_start(messages: Sequence[ModelMessage], keep_recent_tokens: int) -> int:
    """Return where the verbatim tail begins: the newest `keep_recent_tokens`, never between a call and its result."""
    start, total = len(messages), 0
    while start > 1:
        tokens = _message_tokens(messages[start - 1])
        if total + tokens > keep_recent_tokens and start < len(messages):
            break
        total += tokens
        start -= 1
    # A request answering tool calls stays with the response that made them.
    while 1 < start < len(messages) and _answers_calls(messages[start]):
        start -= 1
    return start


async def summarize_middle(messages: Sequence[ModelMessage], summarizer: Summarizer, keep_recent_tokens: int,
                           tool_result_chars: int, total_chars: int, summary_instructions: str = "",
                           instructions: str | None = None) -> CompactionResult:
    """Replace everything between the first message and the recent tail by one summary (rewriting any earlier one)."""
    messages = list(messages)
    start = tail_start(messages, keep_recent_tokens)
    middle = messages[1:start]
    if not any(not is_summary(m) for m in middle):
        return CompactionResult(messages)
    text = summary_request_text(messages[0], middle, tool_result_chars, total_chars)
    summary = (await summarizer(text, summarizer_instructions(summary_instructions, instructions))).strip()
    if not summary:
        raise ValueError("the summarizer returned an empty summary")
    message = ModelRequest(parts=[UserPromptPart(f"{SUMMARY_HEADER}\n{summary}")])
    return CompactionResult([messages[0], message, *messages[start:]], summarized=True, summary=summary,
                            removed=middle, removed_messages=len(middle))


# --- Both steps -----------------------------------------------------------------------------------


async def compact(messages: Sequence[ModelMessage], settings: Settings, summarizer: Summarizer | None, *,
                  target: int, aggressive: bool = False, force_summary: bool = False,
                  instructions: str | None = None) -> CompactionResult:
    """Shorten a history below `target` tokens, cheapest first; a failed summary keeps the clearing and is reported.

    `aggressive` (the provider rejected the request) clears every old result and keeps a shorter tail;
    `force_summary` (/compact) summarizes even when clearing was enough.
    """
    before = estimate_tokens(messages)
    ratio = usage_ratio(messages)
    result = CompactionResult(list(messages), tokens_before=before)
    how = settings.how_to_shorten
    if how in ("both", "clear"):
        keep, minimum = (0, 0) if aggressive else (settings.keep_recent_tool_results, settings.minimum_worth_clearing)
        result.messages, result.cleared_count, _ = clear_tool_results(result.messages, keep, minimum)
    wanted = force_summary or _raw(result.messages, ratio) > target
    if how in ("both", "summarize") and wanted and summarizer is not None:
        keep_recent = settings.keep_recent_messages
        if aggressive:
            keep_recent = min(keep_recent, max(target // 4, 1))
        try:
            summarized = await summarize_middle(
                result.messages, summarizer, keep_recent, settings.tool_result_size_in_summary,
                settings.total_size_in_summary, settings.summary_instructions, instructions)
        except Exception as error:  # any provider or output failure: keep the clearing, report, carry on
            log.warning("compaction summary failed: %s", error, exc_info=True)
            result.error = f"{type(error).__name__}: {error}"
        else:
            if summarized.summarized:
                result.messages, result.summarized = summarized.messages, True
                result.summary, result.removed = summarized.summary, summarized.removed
                result.removed_messages = summarized.removed_messages
    if result.changed:
        result.messages = _mark_usage_stale(result.messages, ratio)
    result.tokens_after = estimate_tokens(result.messages)
    return result


def _raw(messages: Sequence[ModelMessage], ratio: float) -> int:
    return math.ceil(estimate_tokens(messages, calibrate=False) * ratio)


def threshold_target(settings: Settings) -> int:
    """Return the size threshold compaction aims for."""
    return int(settings.compact_above * TARGET_SHARE)


async def compact_conversation_context(
    messages: Sequence[ModelMessage], settings: Settings, model_spec: ModelSpec, instructions: str | None = None,
    *, force: bool = False, summarizer: Summarizer | None = None,
) -> CompactionResult:
    """Compact a stored model context after a reply (above "Compact above") or on /compact (`force=True`).

    `model_spec` is the configuration the summary is written with ("Summarize with" and "Summary model"
    applied: `app.skills.compaction.summary_spec_for`); `summarizer` replaces it in tests and benchmarks.
    Run it on the runtime loop; a failed summary does not raise but keeps the clearing and sets `error`.
    """
    tokens = estimate_tokens(messages)
    if not force and tokens <= settings.compact_above:
        return CompactionResult(list(messages), tokens_before=tokens, tokens_after=tokens)
    error = None
    if summarizer is None:
        try:
            summarizer = Summarizer(build_model(model_spec), model_spec.settings("summary"))
        except ModelUnavailable as unavailable:  # a missing key: clearing alone still helps
            log.warning("compaction cannot build the summary model: %s", unavailable)
            error = f"The summary model is unavailable: {unavailable}"
    result = await compact(messages, settings, summarizer, target=threshold_target(settings), force_summary=force,
                           instructions=instructions)
    result.error = result.error or error
    return result
