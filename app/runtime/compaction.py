"""Compaction: shorten what the model is given, cheapest first, so a long conversation keeps fitting.

Two steps, both transformations of a pydantic-ai message list: clear old tool results (free), then
replace the middle of the conversation by one summary a model writes. The transcript the user sees is
stored elsewhere and never touched here.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
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

from app.runtime import failures
from app.runtime.context_size import USAGE_KEY, estimate_tokens, message_tokens, part_tokens, text_tokens, usage_ratio
from app.runtime.offline import SUMMARY_HEADINGS, SUMMARY_MARKER

log = logging.getLogger(__name__)

SUMMARY_HEADER = "[Summary of the earlier conversation]"
CLEARED_PREFIX = "[cleared to save space"
# Threshold compaction aims below this share of "Compact above", so the next turn does not trigger it again.
TARGET_SHARE = 0.8
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
        """Whether `messages` differs from the history given (only ever by being smaller)."""
        return bool(self.cleared_count or self.summarized)

    @property
    def failed(self) -> bool:
        """Whether shortening was tried and the history is left as it was: `error` says why."""
        return not self.changed and self.error is not None

    def notice(self) -> str:
        """Say in one sentence what was shortened, or why nothing could be, for the note in the chat."""
        if self.failed:
            return f"The conversation could not be made shorter for the model: {self.error}."
        done = []
        if self.cleared_count:
            done.append(f"{self.cleared_count} old tool result{'s' * (self.cleared_count != 1)} cleared")
        if self.summarized:
            done.append(f"{self.removed_messages} earlier messages summarized")
        size = f"about {self.tokens_before:,} → {self.tokens_after:,} tokens"
        text = "The conversation was shortened for the model"
        text += f" ({'; '.join([*done, size])})." if done else "."
        if self.error and not self.summarized:
            text += f" The summary could not be used ({self.error}), so only old tool results were cleared."
        return text


def is_summary_part(part: Any) -> bool:
    """Tell whether a message part is the compaction summary."""
    return isinstance(part, UserPromptPart) and isinstance(part.content, str) and part.content.startswith(
        SUMMARY_HEADER)


def summaries(messages: Sequence[ModelMessage]) -> list[str]:
    """Return the text of the summaries in a history (one, unless something else wrote one)."""
    return [p.content.removeprefix(SUMMARY_HEADER).strip() for m in messages if isinstance(m, ModelRequest)
            for p in m.parts if is_summary_part(p)]


def current_turn_start(messages: Sequence[ModelMessage]) -> int:
    """Return the index of the latest user prompt (not the summary): the turn the agent works on now."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and any(
                isinstance(p, UserPromptPart) and not is_summary_part(p) for p in message.parts):
            return index
    return 0


def mentioned(text: str, limit: int = 12, exclude: str = "") -> list[str]:
    """Return the identifiers a text mentions, but not in `exclude`: codes, files, URLs, then numbers."""
    # A sentence's full stop is not part of a URL or a code.
    found = [m for m in dict.fromkeys(m.rstrip(".,;:!?") for m in IDENTIFIER.findall(text))
             if m not in exclude]
    found.sort(key=str.isdigit)  # stable: order of appearance within each kind
    return found[:limit]


def cleared_note(part: ToolReturnPart) -> str:
    """Return the note that replaces a cleared tool result, naming what it mentioned."""
    # A few tokens of identifiers tell the agent (and a later summary) what the result was about.
    ids = mentioned(part.model_response_str())
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
    kept = freed = 0
    notes: dict[tuple[int, int], str] = {}
    for i in range(len(messages) - 1, -1, -1):
        if not isinstance(messages[i], ModelRequest):
            continue
        for j in range(len(messages[i].parts) - 1, -1, -1):
            part = messages[i].parts[j]
            # Typed returns (tool search, capability loads) carry state pydantic-ai reads back: leave them.
            if type(part) is not ToolReturnPart or is_cleared(part):
                continue
            tokens = part_tokens(part)
            kept += tokens
            if i >= protected_from or (kept <= keep_recent_tokens and not notes):
                continue
            note = cleared_note(part)
            if text_tokens(note) < tokens:  # a result shorter than its note stays
                notes[(i, j)] = note
                freed += tokens - text_tokens(note)
    if not notes or freed < max(minimum_worth_clearing, 1):
        return list(messages), 0, 0
    out = list(messages)
    for i in {i for i, _ in notes}:
        out[i] = replace(out[i], parts=[replace(p, content=notes[(i, j)]) if (i, j) in notes else p
                                        for j, p in enumerate(out[i].parts)])
    return out, len(notes), freed


@dataclass
class Summarizer:
    """Writes summaries with a pydantic-ai Agent on the given model."""

    model: Model
    settings: ModelSettings | None = None

    async def __call__(self, text: str, instructions: str) -> str:
        agent = PydanticAgent(self.model, instructions=instructions, output_type=str, name="summarizer")
        return (await agent.run(text, model_settings=self.settings)).output


def summarizer_instructions(summary_instructions: str = "", instructions: str | None = None) -> str:
    """Return the summarizer's instructions: the marker, the headings, the agent's and the user's wishes."""
    headings = ", ".join(f"## {h}" for h in SUMMARY_HEADINGS)
    lines = [
        SUMMARY_MARKER,
        "You write the summary that replaces the earlier part of a conversation between a user and an AI "
        "agent. The agent continues from your summary alone, so keep what it needs to carry on the work.",
        f"Write under exactly these headings, in this order: {headings}. Objective: what the user wants. "
        "Done so far: what has been done and found. Decisions: what was decided. Left to do: what remains.",
        "Identifiers: every identifier that came up - record ids, file names, URLs, numbers the user gave - "
        "exactly as written. Never drop one.",
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
    prior = summaries([first, *middle])
    head = [f"The conversation began with this request from the user: {_cut(_prompt_text(first), 1_000)}"]
    if prior:
        head.append("The earlier summary, to rewrite (carry over what holds):\n" + "\n".join(prior))
    head.append("The conversation since then:")
    fixed = _cut("\n\n".join(head), total_chars // 2)  # an old summary must not crowd out the new messages
    items = [line for m in middle for line in _lines(m, tool_result_chars)]
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
        elif isinstance(part, UserPromptPart) and not is_summary_part(part):
            lines.append(f"User: {_prompt_text(part)}")
        elif isinstance(part, TextPart) and part.content.strip():
            lines.append(f"Assistant: {part.content.strip()}")
    return lines


def _prompt_text(item: ModelMessage | UserPromptPart) -> str:
    parts = item.parts if isinstance(item, ModelRequest | ModelResponse) else [item]
    texts = []
    for part in (p for p in parts if isinstance(p, UserPromptPart) and not is_summary_part(p)):
        for c in [part.content] if isinstance(part.content, str) else part.content:
            texts.append(c if isinstance(c, str) else c.content if isinstance(c, TextContent) else "[file]")
    return "\n".join(texts)


def _cut(text: str, limit: int) -> str:
    """Cut text to about `limit` characters, naming the identifiers the cut-off part mentioned."""
    if len(text) <= limit or limit < 60:
        return text[:max(limit, 0)]
    size = limit
    for _ in range(3):  # the note takes room from the head, which may move identifiers into the note
        ids = mentioned(text[size:], limit=20, exclude=text[:size])
        also = f"; it also mentioned: {', '.join(ids)}" if ids else ""
        note = f"… [cut short{also}]"  # no count: a number here would pass for an identifier
        if size + len(note) <= limit or size <= limit // 2:
            break
        size = max(limit - len(note), limit // 2)
    return text[:size] + note


def _fit(items: list[str], budget: int) -> list[str]:
    """Cut the longest items to an equal share until all fit in `budget` characters."""
    if sum(map(len, items)) <= budget:
        return items
    share, remaining = 0, max(budget, 0)
    for count, length in enumerate(sorted(map(len, items))):
        if length > (share := remaining // (len(items) - count)):
            break
        remaining -= length
    return [_cut(item, share) for item in items]


def tail_start(messages: Sequence[ModelMessage], keep_recent_tokens: int) -> int:
    """Return where the verbatim tail begins: the newest `keep_recent_tokens`, never inside a call pair."""
    start, total = len(messages), 0
    while start > 1:
        tokens = message_tokens(messages[start - 1])
        if total + tokens > keep_recent_tokens and start < len(messages):
            break
        total, start = total + tokens, start - 1
    # The tail opens with a response: a request answering tool calls stays with the response that made
    # them, and a request right after the summary would be merged into it by pydantic-ai's history cleanup.
    while 1 < start < len(messages) and isinstance(messages[start], ModelRequest):
        start -= 1
    return start


async def summarize_middle(messages: Sequence[ModelMessage], summarizer: Summarizer, keep_recent_tokens: int,
                           tool_result_chars: int, total_chars: int, summary_instructions: str = "",
                           instructions: str | None = None) -> CompactionResult:
    """Replace all between the first message and the recent tail by one summary, rewriting any earlier one.

    The summary is a part appended to the first request, where pydantic-ai's history cleanup would merge a
    request of its own anyway; an earlier summary there is replaced.
    """
    messages = list(messages)
    start = tail_start(messages, keep_recent_tokens)
    middle = messages[1:start]
    if all(is_summary_part(p) for m in middle for p in m.parts):
        return CompactionResult(messages)
    text = summary_request_text(messages[0], middle, tool_result_chars, total_chars)
    summary = (await summarizer(text, summarizer_instructions(summary_instructions, instructions))).strip()
    if not summary:
        raise ValueError("the summarizer returned an empty summary")
    part = UserPromptPart(f"{SUMMARY_HEADER}\n{summary}")
    first = messages[0]
    if isinstance(first, ModelRequest):
        head = [replace(first, parts=[*(p for p in first.parts if not is_summary_part(p)), part])]
    else:
        head = [first, ModelRequest(parts=[part])]
    return CompactionResult([*head, *messages[start:]], summarized=True, summary=summary, removed=middle,
                            removed_messages=len(middle))


async def compact(messages: Sequence[ModelMessage], settings: Settings, summarizer: Summarizer | None, *,
                  target: int, aggressive: bool = False, force_summary: bool = False,
                  instructions: str | None = None) -> CompactionResult:
    """Shorten a history below `target` tokens, cheapest first; a failed summary keeps the clearing, reported.

    `aggressive` (the provider rejected the request) clears every old result and keeps a shorter tail;
    `force_summary` (/compact, overflow) summarizes even when clearing was enough. Each step is kept only
    if it makes the history smaller: a summary longer than what it replaces is a failure (`error`), and
    when nothing shrank the history is returned as it was (`failed`).
    """
    ratio = usage_ratio(messages)

    def size(history: Sequence[ModelMessage]) -> int:  # one calibration for before and after
        return math.ceil(estimate_tokens(history, calibrate=False) * ratio)

    result = CompactionResult(list(messages), tokens_before=size(messages))
    if settings.how_to_shorten in ("both", "clear"):
        keep, minimum = settings.keep_recent_tool_results, settings.minimum_worth_clearing
        if aggressive:
            keep = minimum = 0
        result.messages, result.cleared_count, _ = clear_tool_results(result.messages, keep, minimum)
    wanted = force_summary or estimate_tokens(result.messages, calibrate=False) * ratio > target
    if settings.how_to_shorten in ("both", "summarize") and wanted and summarizer is not None:
        keep_recent = settings.keep_recent_messages
        if aggressive:
            keep_recent = min(keep_recent, target // 4)
        try:
            summarized = await summarize_middle(
                result.messages, summarizer, keep_recent, settings.tool_result_size_in_summary,
                settings.total_size_in_summary, settings.summary_instructions, instructions)
        except Exception as error:  # by design: a failed summary keeps the clearing, reported, never raised
            log.warning("compaction summary failed: %s", error, exc_info=True)
            result.error = failures.in_words(error)
        else:
            if summarized.summarized and size(summarized.messages) >= size(result.messages):
                result.error = (f"the summary was not shorter than the messages it replaces (about "
                                f"{size(result.messages):,} → {size(summarized.messages):,} tokens)")
            elif summarized.summarized:
                summarized.cleared_count = result.cleared_count
                summarized.tokens_before, result = result.tokens_before, summarized
    if result.changed:  # kept responses' usage no longer describes this history; keep the ratio it gave
        stamp = {USAGE_KEY: {"ratio": round(ratio, 4)}}
        result.messages = [replace(m, metadata={**(m.metadata or {}), **stamp})
                           if isinstance(m, ModelResponse) else m for m in result.messages]
    result.tokens_after = size(result.messages)
    return result


def threshold_target(settings: Settings) -> int:
    """Return the size threshold compaction aims for."""
    return int(settings.compact_above * TARGET_SHARE)
