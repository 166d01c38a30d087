"""The OpenAI-compatible API's bodies as pydantic models, for its OpenAPI document (the views check bodies
themselves, in app/api/openai_compat.py, so that each mistake is answered once, naming its parameter)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.models.base import ID_MAX


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    role: Literal["system", "developer", "user", "assistant"]
    """system and developer messages are added below the agent's own instructions."""
    content: str | list[TextPart] | None
    name: str | None = None


class StreamOptions(BaseModel):
    include_usage: bool = False
    """Send a last chunk with the usage and no choices."""


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # sampling parameters such as top_p or seed are accepted, ignored

    model: str
    """The agent's slug, as GET /v1/models lists it."""
    messages: list[ChatMessage] = Field(min_length=1)
    """The conversation; the last message is the user's new one."""
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_completion_tokens: int | None = Field(None, ge=1, le=ID_MAX)
    """At most the agent's model's max tokens (else its context window): a larger one is 400."""
    max_tokens: int | None = Field(None, ge=1, le=ID_MAX)
    temperature: float | None = Field(None, ge=0, le=2)


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


ERRORS = {f"HTTP_{status}": OpenAIErrorBody for status in (400, 401, 403, 404, 409, 413, 415, 429, 502, 503)}
