"""The bodies of the conversation and message endpoints, as pydantic models (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from app.api.errors import ApiError
from app.api.patterns import NAME, NON_BLANK
from app.models import Conversation, Message
from app.models.base import ID_MAX
from app.policy.bidi import bidi_problem

# Metadata a client may read: never the run's extras, which hold the resolved page context.
PUBLIC_META = ("status", "error", "proposals", "receipt", "pending")


DatabaseId = Annotated[int, Field(ge=1, le=ID_MAX)]
"""An id in a JSON body: 1..2**31 - 1, what the database's `integer` ids hold (422 past it, as the document says)."""


class Body(BaseModel):
    # strict: JSON has types, so "1", true and 1.0 are not the id 1
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


class NewConversation(Body):
    agent_id: DatabaseId
    """The agent to chat with (one the user may use)."""
    title: Annotated[str, Field(max_length=200, json_schema_extra={"pattern": NAME})] | None = None
    """A title, on one line; without one (or a blank one), the conversation gets one after its first answer."""

    @field_validator("title")
    @classmethod
    def _one_line(cls, title: str | None) -> str | None:
        if title is None:
            return None
        if problem := bidi_problem(title):
            raise ValueError(problem)
        return " ".join(title.split()) or None  # as the chat's rename does


class NewMessage(Body):
    message: str = Field(min_length=1, json_schema_extra={"pattern": NON_BLANK})
    """The user's message (at most MAX_MESSAGE_CHARS characters)."""
    context: dict[str, Any] | None = None
    """`{"page": {...}}`, as for the htmx chat (docs/api.md, Page context)."""


class AgentRun(Body):
    thread_id: DatabaseId
    """The conversation (the user's own) whose agent answers."""
    message: str = Field(min_length=1, json_schema_extra={"pattern": NON_BLANK})
    """The user's message."""
    context: dict[str, Any] | None = None
    """`{"page": {...}}`, as for the base transport."""


class ConversationOut(Body):
    id: int
    title: str | None
    agent_id: int | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationOut:
        return cls(id=conversation.id, title=conversation.title, agent_id=conversation.agent_id,
                   created_at=conversation.created_at, updated_at=conversation.updated_at)


class MessageOut(Body):
    id: int
    role: str
    content: str
    created_at: datetime
    metadata: dict[str, Any]
    """`status`, `error`, `proposals`; for a turn that waits for a person also `waitingFor` (approval, plan,
    question) and `pending`: each waiting call as `GET /api/approvals` gives it, with `answer`, how to answer."""

    @classmethod
    def of(cls, message: Message, pending: list[dict[str, Any]] | None = None) -> MessageOut:
        meta = message.meta or {}
        metadata = {key: meta[key] for key in PUBLIC_META if key in meta}
        if meta.get("waiting_for"):
            metadata["waitingFor"] = meta["waiting_for"]
        if pending:
            metadata["pending"] = pending
        return cls(id=message.id, role=message.role, content=message.content, created_at=message.created_at,
                   metadata=metadata)


def parse(model: type[Body], body: Any) -> Any:
    """Validate a request body; a 422 VALIDATION_FAILED naming each field otherwise."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        fields = {".".join(str(p) for p in e["loc"]) or "body": e["msg"] for e in error.errors()}
        raise ApiError(422, "Some fields need attention.", fields=fields) from None


def dump(model: BaseModel) -> dict[str, Any]:
    """Serialize a response model, camelCase, leaving unset optional fields out."""
    return model.model_dump(mode="json", by_alias=True)
