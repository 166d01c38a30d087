"""Knowledge: embeddings, the vector store, the memories' store, knowledge bases (chunks, lexical, hybrid)."""

from __future__ import annotations

from flask import Flask

from app.database import purge_steps
from app.knowledge import memories


def init_app(app: Flask) -> None:
    """Register the memories (rows and vectors) a user's purge deletes, and the vector store's vacuum after it."""
    steps = purge_steps(app)
    steps.user.append(memories.purge_user_memories)
    steps.after_commit["vectors"] = memories.vacuum_vectors.delay
