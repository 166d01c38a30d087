"""The OpenAI-compatible API's bodies as pydantic models, for its OpenAPI document (the views check bodies
themselves, in app/api/openai_compat.py, so that each mistake is answered once, naming its parameter).

The request's models state what `openai_compat.parse` refuses, but for the order of the messages (the
last one, after any system or developer messages, is the user's), which no JSON Schema can say.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.openai_compat import EMPTY_ASSISTANT_KEYS, KNOWN, MAX_TEMPERATURE
from app.models.base import ID_MAX

# What `if value:` lets through: a member present but empty.
EMPTY = {"enum": [None, False, 0, "", [], {}], "description": "Left out, or empty: this endpoint takes no tools."}


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    """One message; `content` is null only in an assistant's, which may carry its empty tool members too."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema: _by_role(schema))

    role: Literal["system", "developer", "user", "assistant"]
    """system and developer messages are added below the agent's own instructions."""
    content: str | list[TextPart] | None
    name: str = ""


def _by_role(schema: dict[str, Any]) -> None:
    """An assistant's message (`content` may be null or left out, tool members empty) or another's."""
    properties = schema.pop("properties")
    schema.pop("required", None)
    schema.pop("additionalProperties", None)
    content = properties["content"]["anyOf"]
    others = {"type": "object", "required": ["role", "content"], "additionalProperties": False,
              "properties": {**properties, "role": {"enum": ["system", "developer", "user"]},
                             "content": {"anyOf": [branch for branch in content if branch.get("type") != "null"]}}}
    assistant = {"type": "object", "required": ["role"], "additionalProperties": False,
                 "properties": {**properties, "role": {"const": "assistant"},
                                **{key: EMPTY for key in sorted(EMPTY_ASSISTANT_KEYS)}}}
    schema["oneOf"] = [others, assistant]


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include_usage: bool | None = False
    """Send a last chunk with the usage and no choices."""


class ChatCompletionRequest(BaseModel):
    """A chat completion: the members below, and OpenAI's that only tune sampling (`top_p`, `seed`, ...),
    accepted and ignored; any other member is 400, as OpenAI answers. A tool is never taken: `tools`,
    `functions` and tool messages are refused, `n` is 1."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema: _request_rules(schema))

    model: str = Field(min_length=1)
    """The agent's slug, as GET /v1/models lists it."""
    messages: list[ChatMessage] = Field(min_length=1)
    """The conversation; the last message (after any system or developer ones) is the user's new one."""
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    """Only with `stream`: true."""
    max_completion_tokens: int | None = Field(None, ge=1, le=ID_MAX)
    """At most the agent's model's max tokens (else its context window): a larger one is 400."""
    max_tokens: int | None = Field(None, ge=1, le=ID_MAX)
    temperature: float | None = Field(None, ge=0, le=MAX_TEMPERATURE)


def _request_rules(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    properties["messages"]["contains"] = {"type": "object", "properties": {"role": {"const": "user"}}}
    properties.update({
        "n": {"enum": [None, 1]},
        "tools": EMPTY, "functions": EMPTY,
        "tool_choice": {"enum": [None, "none", "auto"]}, "function_call": {"enum": [None, "none", "auto"]},
        "response_format": {"enum": [None, {"type": "text"}]},
        "logprobs": {"enum": [None, False]},
    })
    # The members that only tune sampling elsewhere, by name only: any JSON value, of no effect.
    schema["propertyNames"] = {"enum": sorted(KNOWN)}
    schema["additionalProperties"] = {}
    schema["if"] = {"required": ["stream_options"], "properties": {"stream_options": {"type": "object"}}}
    schema["then"] = {"required": ["stream"], "properties": {"stream": {"const": True}}}


class Model(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"]
    data: list[Model]


class AssistantMessage(BaseModel):
    role: Literal["assistant"]
    content: str
    refusal: None = None


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length", "content_filter"]


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class SkilldeskSummary(BaseModel):
    """Skilldesk's extension: what the run did beside its answer."""

    run: str
    status: str
    conversation: int | None
    """The stored conversation (X-Skilldesk-Conversation), or null for a stateless exchange."""
    steps: list[dict[str, Any]]
    """The agent's tool steps: tool, arguments, result (clipped), failed."""
    proposals: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    """What waits for a person (approval, plan, question): id, kind, tool."""
    citations: list[dict[str, Any]]
    receipt: dict[str, Any] | None = None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    skilldesk: SkilldeskSummary


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorBody(BaseModel):
    error: ErrorDetail


ERRORS = {f"HTTP_{status}": OpenAIErrorBody for status in (400, 401, 403, 404, 409, 413, 415, 422, 429, 502, 503)}
COMPLETION_ERRORS = {**ERRORS, "HTTP_504": OpenAIErrorBody}
"""A completion also answers 504 when the agent did not answer in time (without `stream`)."""
