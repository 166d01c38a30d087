"""A conversation's model context (what the model is given) as pydantic-ai messages."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from app.models import Conversation


def load_history(conversation: Conversation) -> list[ModelMessage]:
    """Return the conversation's model context as pydantic-ai messages."""
    if not conversation.model_context:
        return []
    return list(ModelMessagesTypeAdapter.validate_json(conversation.model_context))
