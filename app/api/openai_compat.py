"""The OpenAI chat-completions dialect: requests checked into an exchange, answers and errors in OpenAI's shapes.

A request's `messages` are the conversation: system (and developer) messages are instructions added
below the agent's own, never in their place; the last message is the user's new one; the user and
assistant messages before it are the earlier turns. Agents use their own skills, so a request that
defines `tools` (or functions) is refused, and so are tool messages, assistant tool calls, content
parts other than text, and `n` above 1. Parameters that only tune sampling elsewhere (top_p, seed,
stop, ...) are accepted and ignored; an unknown one is refused, as OpenAI does.

The answer is the stored, checked message of the run; the agent's tool steps, proposals, receipt and
whatever waits for a person are summed up in the `skilldesk` member (an extension: clients ignore
members they do not know). The third encoder of a run's stored events, beside the htmx and AG-UI ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.api.exchanges import Exchange, Request
from app.extensions import db
from app.models import Message, Run

# Accepted, and of no effect on an agent's answer (or already the only behaviour there is).
IGNORED = frozenset({
    "top_p", "presence_penalty", "frequency_penalty", "seed", "stop", "user", "logit_bias", "top_logprobs",
    "store", "metadata", "service_tier", "parallel_tool_calls", "prompt_cache_key", "prompt_cache_retention",
    "reasoning_effort", "verbosity", "safety_identifier", "modalities", "prediction", "web_search_options",
})
KNOWN = IGNORED | {"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens",
                   "temperature", "n", "tools", "tool_choice", "functions", "function_call", "response_format",
                   "logprobs"}
ROLES = ("system", "developer", "user", "assistant")
UNSUPPORTED_PARTS = ("image_url", "input_audio", "file", "image", "audio", "refusal")
MESSAGE_KEYS = frozenset({"role", "content", "name"})
# Members an assistant message of a client's history may carry when empty (SDKs send them as null).
EMPTY_ASSISTANT_KEYS = frozenset({"tool_calls", "function_call", "refusal", "audio", "annotations"})
MAX_TEMPERATURE = 2.0
TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
# How a run's status ends an answer.
FINISH = {"succeeded": "stop", "cancelled": "stop", "waiting": "stop", "unfinished": "length",
          "refused": "content_filter"}
FAILED = ("failed", "interrupted")
STEP_CHARS = 500


class OpenAIError(Exception):
    """An answer of the OpenAI-compatible API that is not a success, in OpenAI's shape; raise it from a view."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param, self.retry_after = status, message, code, param, retry_after


def error_body(status: int, message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """Return `{"error": {"message", "type", "param", "code"}}` for a status."""
    kind = TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@dataclass
class Asked:
    """A checked chat-completions request."""

    model: str
    exchange: Request
    stream: bool = False
    include_usage: bool = False
    max_tokens: int | None = None
    temperature: float | None = None


def parse(body: Any) -> Asked:
    """Check a chat-completions body; raise OpenAIError (400, naming the parameter) for the first mistake."""
    if not isinstance(body, dict):
        raise OpenAIError(400, "The body must be a JSON object.", "invalid_request")
    unknown = sorted(set(body) - KNOWN)
    if unknown:
        raise OpenAIError(400, f"Unrecognized request argument supplied: {unknown[0]}", "unknown_parameter",
                          unknown[0])
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise OpenAIError(400, "Name the agent as `model` (GET /v1/models lists yours).", "invalid_value", "model")
    _refuse_tools(body)
    stream = _flag(body, "stream")
    options = body.get("stream_options")
    if options is not None and not stream:
        raise OpenAIError(400, "stream_options is only allowed with stream: true.", "invalid_value", "stream_options")
    if options is not None and (not isinstance(options, dict) or set(options) - {"include_usage"}):
        raise OpenAIError(400, "stream_options takes include_usage only.", "invalid_value", "stream_options")
    include_usage = _flag(options or {}, "include_usage", "stream_options.include_usage")
    asked = Asked(model=model, exchange=_messages(body.get("messages")), stream=stream, include_usage=include_usage)
    asked.max_tokens = _max_tokens(body)
    temperature = body.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, int | float) \
                or not 0 <= temperature <= MAX_TEMPERATURE:
            raise OpenAIError(400, f"temperature is a number from 0 to {MAX_TEMPERATURE:g}.", "invalid_value",
                              "temperature")
        asked.temperature = float(temperature)
    return asked


def _flag(body: dict, name: str, param: str | None = None) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise OpenAIError(400, f"{param or name} is true or false.", "invalid_type", param or name)
    return value


def _refuse_tools(body: dict) -> None:
    for name in ("tools", "functions"):
        if body.get(name):
            raise OpenAIError(400, "Skilldesk agents use their own skills: this endpoint takes no `tools` (or "
                                   "`functions`); send the request without them.", "tools_not_supported", name)
    choice = body.get("tool_choice")
    if choice not in (None, "none", "auto"):
        raise OpenAIError(400, "tool_choice is none or auto: this endpoint takes no tools.", "tools_not_supported",
                          "tool_choice")
    if body.get("function_call") not in (None, "none", "auto"):
        raise OpenAIError(400, "function_call is not supported: this endpoint takes no functions.",
                          "tools_not_supported", "function_call")
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise OpenAIError(400, "An agent gives one answer: n must be 1.", "invalid_value", "n")
    response_format = body.get("response_format")
    if response_format is not None and response_format != {"type": "text"}:
        raise OpenAIError(400, "Agents answer in text: response_format is {\"type\": \"text\"} or left out.",
                          "invalid_value", "response_format")
    if body.get("logprobs") not in (None, False):
        raise OpenAIError(400, "logprobs are not available from an agent.", "invalid_value", "logprobs")


def _max_tokens(body: dict) -> int | None:
    """max_completion_tokens, else the older max_tokens; each checked when given."""
    given = None
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OpenAIError(400, f"{name} is a whole number of at least 1.", "invalid_value", name)
        given = value if given is None else given
    return given


def _messages(messages: Any) -> Request:
    if not isinstance(messages, list) or not messages:
        raise OpenAIError(400, "messages is a non-empty array of {role, content} objects.", "invalid_value",
                          "messages")
    instructions: list[str] = []
    turns: list[tuple[str, str]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise OpenAIError(400, f"{where} is not an object.", "invalid_type", where)
        role = message.get("role")
        if role in ("tool", "function"):
            raise OpenAIError(400, f"{where}: {role} messages answer tool calls, and this endpoint takes no tools.",
                              "tools_not_supported", f"{where}.role")
        if role not in ROLES:
            raise OpenAIError(400, f"{where}.role must be one of {', '.join(ROLES)}; got {json.dumps(role)[:40]}.",
                              "invalid_value", f"{where}.role")
        _check_keys(message, role, where)
        text = _text_of(message.get("content"), where, role)
        if role in ("system", "developer"):
            if text.strip():
                instructions.append(text)
        else:
            turns.append((role, text))
    if not turns or turns[-1][0] != "user":
        raise OpenAIError(400, "The last message (after any system messages) must be the user's.", "invalid_value",
                          "messages")
    return Request(prompt=turns[-1][1].strip(), earlier=turns[:-1], instructions=instructions)


def _check_keys(message: dict, role: str, where: str) -> None:
    for key, value in message.items():
        if key in MESSAGE_KEYS:
            continue
        if role == "assistant" and key in EMPTY_ASSISTANT_KEYS:
            if value:
                raise OpenAIError(400, f"{where}.{key}: assistant tool calls are not supported; this endpoint "
                                       "takes no tools.", "tools_not_supported", f"{where}.{key}")
            continue
        raise OpenAIError(400, f"{where}: unrecognized member {key!r}.", "unknown_parameter", f"{where}.{key}")
    if "name" in message and not isinstance(message["name"], str):
        raise OpenAIError(400, f"{where}.name is a string.", "invalid_type", f"{where}.name")


def _text_of(content: Any, where: str, role: str) -> str:
    if isinstance(content, str):
        return content
    if content is None and role == "assistant":
        return ""
    if not isinstance(content, list):
        raise OpenAIError(400, f"{where}.content is a string or an array of text parts.", "invalid_type",
                          f"{where}.content")
    texts = []
    for index, part in enumerate(content):
        at = f"{where}.content[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in UNSUPPORTED_PARTS:
            raise OpenAIError(400, f"{at}: {kind} parts are not supported; agents take text.",
                              "unsupported_content", f"{at}.type")
        if kind != "text":
            raise OpenAIError(400, f"{at}: unknown content part type {json.dumps(kind)[:40]}; use text.",
                              "invalid_value", f"{at}.type")
        if not isinstance(part.get("text"), str) or set(part) - {"type", "text"}:
            raise OpenAIError(400, f"{at} is {{\"type\": \"text\", \"text\": \"...\"}}.", "invalid_value", at)
        texts.append(part["text"])
    return "\n".join(texts)


def model_entry(slug: str, created: int, owner: str) -> dict[str, Any]:
    """Return an agent as an OpenAI model object."""
    return {"id": slug, "object": "model", "created": created, "owned_by": owner}


@dataclass
class Ending:
    """How a finished run reads as an answer: its text, its finish reason, and Skilldesk's summary."""

    content: str
    finish_reason: str | None
    extension: dict[str, Any]
    usage: dict[str, int]
    error: dict[str, Any] | None = None


def ending(exchange: Exchange, run: Run | None, message: Message | None, waiting_note: str) -> Ending:
    """Read the run's stored answer: the text (and what waits, said plainly), why it ended, the extension."""
    meta = (message.meta or {}) if message is not None else {}
    status = meta.get("status") or (run.status if run is not None else "failed")
    content = message.content if message is not None else ""
    pending = [item for item in meta.get("pending", []) if isinstance(item, dict)]
    if pending:
        status = "waiting" if status == "succeeded" else status
        content = f"{content}\n\n{waiting_note}" if content.strip() else waiting_note
    input_tokens = (message.input_tokens if message is not None else 0) or 0
    output_tokens = (message.output_tokens if message is not None else 0) or 0
    usage = {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
             "total_tokens": input_tokens + output_tokens}
    extension = {"run": exchange.run_id, "status": status,
                 "conversation": None if exchange.ephemeral else exchange.conversation_id,
                 "steps": [_step(step) for step in (message.steps if message is not None else []) or []],
                 "proposals": meta.get("proposals", []), "pending": pending,
                 "citations": (meta.get("knowledge") or {}).get("citations", [])}
    if meta.get("receipt") is not None:
        extension["receipt"] = meta["receipt"]
    error = None
    if status in FAILED:
        reason = meta.get("error") or (run.error if run is not None else None) or "The run did not finish."
        error = error_body(503 if status == "interrupted" else 502, reason,
                           "run_interrupted" if status == "interrupted" else "run_failed")["error"]
    return Ending(content, FINISH.get(status, "stop"), extension, usage, error)


def _step(step: dict[str, Any]) -> dict[str, Any]:
    result = step.get("result")
    return {"tool": step.get("name"), "arguments": step.get("args"),
            "result": result[:STEP_CHARS] + "…" if isinstance(result, str) and len(result) > STEP_CHARS else result,
            "failed": bool(step.get("failed"))}


def completion(exchange: Exchange, created: int, done: Ending) -> dict[str, Any]:
    """Return a `chat.completion` object for a finished run."""
    return {"id": f"chatcmpl-{exchange.run_id}", "object": "chat.completion", "created": created,
            "model": exchange.agent_slug,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": done.content, "refusal": None},
                         "finish_reason": done.finish_reason, "logprobs": None}],
            "usage": done.usage, "skilldesk": done.extension}


def chunk(exchange: Exchange, created: int, delta: dict[str, Any], finish_reason: str | None = None,
          **extra: Any) -> str:
    """Return one `chat.completion.chunk` as an SSE frame."""
    body = {"id": f"chatcmpl-{exchange.run_id}", "object": "chat.completion.chunk", "created": created,
            "model": exchange.agent_slug,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}], **extra}
    return sse(body)


def usage_chunk(exchange: Exchange, created: int, usage: dict[str, int]) -> str:
    """Return the last chunk `stream_options.include_usage` asks for: no choices, the usage."""
    return sse({"id": f"chatcmpl-{exchange.run_id}", "object": "chat.completion.chunk", "created": created,
                "model": exchange.agent_slug, "choices": [], "usage": usage})


def sse(body: dict[str, Any]) -> str:
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n"


DONE = "data: [DONE]\n\n"


WAITS = {"approval": "waits for your approval to run {tool}", "plan": "waits for you to review its plan",
         "question": "asked you a question ({tool})"}


def waiting_note(exchange: Exchange, pending: list[dict[str, Any]], chat_url: str | None) -> str:
    """Say plainly what waits for a person, and where to answer (nowhere, for a stateless exchange)."""
    what = "; ".join(WAITS.get(str(item.get("kind")), "waits for you ({tool})").format(tool=item.get("tool"))
                     for item in pending)
    if exchange.ephemeral:
        return (f"The agent stopped here: it {what}. This request kept no conversation, so nothing waits; send it "
                "again with the header `X-Skilldesk-Conversation: new` to answer in Skilldesk.")
    return f"The agent stopped here: it {what}. Answer in Skilldesk: {chat_url}"


class StreamEncoder:
    """Encode a run's stored events as chat-completion chunks: the answer's text as it is stored, then its end.

    Text events carry what passed the output guardrails' hold-back window (or, for an agent with output
    checks, the checked answer at the end); the end reconciles what was sent with the stored message: the
    rest of it, or, when the answer was refused after some words had gone out, the refusal after them
    with `finish_reason: "content_filter"`.
    """

    def __init__(self, exchange: Exchange, created: int, include_usage: bool, chat_url: str | None) -> None:
        self.exchange, self.created, self.include_usage, self.chat_url = exchange, created, include_usage, chat_url
        self.sent = ""

    def start(self) -> str:
        return chunk(self.exchange, self.created, {"role": "assistant", "content": ""})

    def encode(self, stored, end, message) -> list[str]:
        if end is None:
            text = "".join((event.data or {}).get("delta", "") for event in stored if event.type == "text")
            return [self._text(text)] if text else []
        run = None if message is not None else db.session.get(Run, self.exchange.run_id)
        pending = [item for item in ((message.meta or {}) if message else {}).get("pending", [])
                   if isinstance(item, dict)]
        done = ending(self.exchange, run, message, waiting_note(self.exchange, pending, self.chat_url))
        rest = done.content[len(self.sent):] if done.content.startswith(self.sent) else \
            ("\n\n" if self.sent else "") + done.content
        frames = [self._text(rest)] if rest else []
        if done.error is not None:
            return [*frames, sse({"error": done.error}), DONE]
        frames.append(chunk(self.exchange, self.created, {}, done.finish_reason, skilldesk=done.extension))
        if self.include_usage:
            frames.append(usage_chunk(self.exchange, self.created, done.usage))
        return [*frames, DONE]

    def _text(self, text: str) -> str:
        self.sent += text
        return chunk(self.exchange, self.created, {"content": text})
