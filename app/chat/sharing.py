"""Snapshots of a conversation for share links, and copies that continue them."""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

from app.extensions import db
from app.models import Conversation, Message, Share, User


def snapshot_of(messages: list[Message]) -> list[dict]:
    """Freeze the visible transcript (what people see, never the model context)."""
    return [
        {"role": m.role, "content": m.content, "steps": m.steps or [], "meta": m.meta or {},
         "created_at": m.created_at.isoformat()}
        for m in messages
    ]


def copy_snapshot(share: Share, user: User) -> Conversation:
    """Start the user's own conversation from a share's snapshot; the caller commits."""
    source = share.conversation
    conversation = Conversation(user_id=user.id, agent_id=source.agent_id, source="copy",
                                title=f"Copy of {source.title}"[:200] if source.title else None)
    db.session.add(conversation)
    db.session.flush()
    history = []
    for item in share.snapshot:
        db.session.add(Message(conversation_id=conversation.id, role=item["role"], content=item["content"],
                               steps=item.get("steps", []), meta=item.get("meta", {})))
        if item["role"] == "user":
            history.append(ModelRequest(parts=[UserPromptPart(item["content"])]))
        elif item["role"] == "assistant" and item["content"]:
            history.append(ModelResponse(parts=[TextPart(item["content"])]))
    conversation.model_context = ModelMessagesTypeAdapter.dump_json(history).decode() if history else None
    return conversation
