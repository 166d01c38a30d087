"""A conversation's model context (what the model is given) as pydantic-ai messages, parsed once at most.

The messages a run ended with are kept in this process for the conversation's next turn: when the
stored JSON is still the very text that run stored, it is not parsed and validated again. Each kept
history is handed out once (runs never share message objects) and the cache is bounded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from app.models import Conversation

KEPT = 512

_kept: OrderedDict[int, tuple[str, list[ModelMessage]]] = OrderedDict()
_lock = threading.Lock()


def load_history(conversation: Conversation) -> list[ModelMessage]:
    """Return the conversation's model context as pydantic-ai messages."""
    stored = conversation.model_context
    if not stored:
        return []
    with _lock:
        kept = _kept.pop(conversation.id, None)
    if kept is not None and kept[0] == stored:
        return kept[1]
    return list(ModelMessagesTypeAdapter.validate_json(stored))


def keep(conversation_id: int, stored: str, messages: list[ModelMessage]) -> None:
    """Remember the messages a run stored as `stored`, for the conversation's next turn in this process."""
    with _lock:
        _kept[conversation_id] = (stored, messages)
        _kept.move_to_end(conversation_id)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
