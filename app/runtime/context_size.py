"""How large a history is for the model, in tokens: an estimate from its characters, calibrated by usage.

Compaction decides with it when to shorten and whether shortening made the history smaller; it runs
before every model request, so it stays a plain pass over the parts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    MULTI_MODAL_CONTENT_TYPES,
    BaseToolCallPart,
    BaseToolReturnPart,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextContent,
)

from app.runtime.offline import MODEL_NAME as OFFLINE_MODEL_NAME

FILE_TOKENS = 1_000  # images and files: providers bill them by size, not by characters
MESSAGE_TOKENS = 4  # role markers and separators around each message
# The provider's reported usage may scale the estimate by 1/MAX_RATIO to MAX_RATIO, no further.
MAX_RATIO = 2.0
# Stamped on responses kept across a compaction: their reported usage measured a history that is gone.
USAGE_KEY = "skilldesk_compaction"


def estimate_tokens(messages: Sequence[ModelMessage], calibrate: bool = True) -> int:
    """Estimate the tokens of a history: characters ÷ 4, files flat, scaled by the provider's last usage."""
    raw = sum(message_tokens(m) for m in messages)
    for message in reversed(messages):  # only the latest instructions are sent
        if isinstance(message, ModelRequest) and message.instructions:
            raw += text_tokens(message.instructions)
            break
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


def message_tokens(message: ModelMessage) -> int:
    """Estimate the tokens of one message."""
    total = MESSAGE_TOKENS
    for part in message.parts:
        # Text content is the common case, and the estimate runs before every request: keep it a plain loop.
        content = getattr(part, "content", None)
        total += (len(content) + 3) // 4 if type(content) is str else part_tokens(part)
    return total


def part_tokens(part: Any) -> int:
    """Estimate the tokens of one message part."""
    if isinstance(part, BaseToolReturnPart):
        return text_tokens(part.model_response_str()) + FILE_TOKENS * len(part.files)
    if isinstance(part, BaseToolCallPart):
        return text_tokens(part.tool_name) + text_tokens(part.args_as_json_str())
    if isinstance(part, FilePart):
        return FILE_TOKENS
    return content_tokens(getattr(part, "content", None))


def content_tokens(content: Any) -> int:
    """Estimate the tokens of a part's content: text, files, or a list or object of them."""
    if content is None:
        return 0
    if isinstance(content, str | TextContent):
        return text_tokens(content if isinstance(content, str) else content.content)
    if isinstance(content, MULTI_MODAL_CONTENT_TYPES):
        return FILE_TOKENS
    if isinstance(content, list | tuple):
        return sum(content_tokens(item) for item in content)
    return text_tokens(json.dumps(content, default=str))


def text_tokens(text: str) -> int:
    """Estimate the tokens of a text: characters ÷ 4, rounded up."""
    return math.ceil(len(text) / 4)
