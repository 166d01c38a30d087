"""Long-term memory storage: a Memory row per memory for people to see, and its vector in Chroma to find it.

The row is the source of truth. A search asks Chroma for the nearest vectors, then keeps only the hits
whose row still exists in the same collection, so a stale vector can never surface a memory.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from flask import current_app

from app.database import mark_purged
from app.extensions import db, jobs
from app.knowledge.embeddings import embedder_from_config
from app.knowledge.remote import ProcessVectorStore
from app.models import Memory, User

if TYPE_CHECKING:
    from app.knowledge.vectors import VectorStore

MAX_CHARS = 2_000
PAGE_SIZE = 50


class MemoryUnavailable(Exception):
    """The memory cannot be used here: a personal memory without a user, a shared one without an agent."""


def vector_store() -> VectorStore:
    """Return the app's vector store (Chroma, embedding with the configured embedder).

    In a web worker of `flask serve` (KNOWLEDGE_PROCESS) the embedded store is the knowledge process's
    (one process may open it): the same methods, asked of that process. A Chroma server is used directly.
    """
    config = current_app.config
    if config.get("KNOWLEDGE_PROCESS") and not config.get("CHROMA_URL"):
        return ProcessVectorStore(embedder_from_config(config))  # type: ignore[return-value]
    # Imported here for laziness: chromadb and numpy cost ~0.5 s at start and only memory needs them.
    from app.knowledge.vectors import store_from_config

    return store_from_config(config)


def collection_for(*, personal: bool, user_id: int | None, agent_id: int | None) -> str:
    """Name the Chroma collection of a user's personal memories or of an agent's shared ones."""
    # One collection per person (or agent) rather than a filter: Chroma's filtered search can miss
    # records when the filter is very selective, and a person's memories are always read together.
    if personal:
        if user_id is None:
            raise MemoryUnavailable("Personal memory needs a signed-in user; this run has none.")
        return f"memories-user-{user_id}"
    if agent_id is None:
        raise MemoryUnavailable("Shared memory belongs to a saved agent; save the agent first.")
    return f"memories-agent-{agent_id}"


def clean_text(text: str) -> str:
    """Collapse whitespace, so one fact is one line however it was typed."""
    return " ".join((text or "").split())


def text_error(text: str, limit: int = MAX_CHARS) -> str | None:
    """Say what is wrong with a memory's text, or None when it may be stored."""
    if not text:
        return "Write what should be remembered."
    if len(text) > limit:
        return f"Keep a memory under {limit:,} characters (this one has {len(text):,})."
    return None


def remember(text: str, *, user_id: int | None, agent_id: int | None, personal: bool) -> tuple[Memory, bool]:
    """Store a memory (row and vector) and commit; return it and whether it is new (False: already known)."""
    collection = collection_for(personal=personal, user_id=user_id, agent_id=agent_id)
    existing = db.session.scalar(
        db.select(Memory).where(Memory.collection == collection, Memory.text == text).limit(1)
    )
    if existing is not None:
        return existing, False
    memory = Memory(user_id=user_id, agent_id=agent_id, scope="personal" if personal else "shared",
                    collection=collection, text=text)
    db.session.add(memory)
    db.session.flush()
    _embed(memory)
    db.session.commit()
    return memory, True


def relevance(distance: float) -> float:
    """Return how relevant a hit is, from its cosine distance: 1 identical, 0 unrelated."""
    return 1 - distance


def recall(query: str, *, user_id: int | None, agent_id: int | None, personal: bool,
           limit: int = 5, min_relevance: float = 0.0) -> list[tuple[Memory, float]]:
    """Return up to `limit` memories nearest in meaning to `query`, nearest first, with their distance.

    Hits below `min_relevance` are noise, not answers: they are left out, so nothing may come back.
    """
    collection = collection_for(personal=personal, user_id=user_id, agent_id=agent_id)
    hits = [hit for hit in vector_store().query(collection, query, n=limit)
            if relevance(hit.distance) >= min_relevance]
    distances = {_row_id(hit.id): hit.distance for hit in hits}
    distances.pop(None, None)
    if not distances:
        return []
    rows = db.session.scalars(
        db.select(Memory).where(Memory.id.in_(distances), Memory.collection == collection)
    )
    return sorted(((memory, distances[memory.id]) for memory in rows), key=lambda pair: pair[1])


def update_memory(memory: Memory, text: str) -> None:
    """Change a memory's text, embed it again, and commit."""
    memory.text = text
    _embed(memory)
    db.session.commit()


def forget(memory: Memory) -> None:
    """Delete a memory and its vector, and commit."""
    vector_store().delete(memory.collection, ids=[memory.vector_id])
    db.session.delete(memory)
    mark_purged("database", "vectors")
    db.session.commit()


def memories_of(user_id: int):
    """Select the memories that came from a user, newest first (for the Memories page)."""
    return (db.select(Memory).where(Memory.user_id == user_id)
            .order_by(Memory.created_at.desc(), Memory.id.desc()))


def purge_user_memories(user: User) -> None:
    """Delete every memory that came from a user, and the vectors; the caller commits."""
    store = vector_store()
    by_collection: dict[str, list[str]] = defaultdict(list)
    for memory in db.session.scalars(db.select(Memory).where(Memory.user_id == user.id)):
        by_collection[memory.collection].append(memory.vector_id)
    for collection, ids in by_collection.items():
        store.delete(collection, ids=ids)
    # The personal collection holds only this person's vectors: drop it whole, stale ones included.
    store.drop(collection_for(personal=True, user_id=user.id, agent_id=None))
    db.session.execute(db.delete(Memory).where(Memory.user_id == user.id))
    mark_purged("database", "vectors")


def _embed(memory: Memory) -> None:
    metadata = {"memory_id": memory.id, "user_id": memory.user_id, "agent_id": memory.agent_id}
    vector_store().upsert(memory.collection, [memory.vector_id], [memory.text], [metadata])


def _row_id(vector_id: str) -> int | None:
    prefix, _, number = vector_id.partition("-")
    return int(number) if prefix == "memory" and number.isdigit() else None


@jobs.task()
def vacuum_vectors() -> None:
    """Clear deleted memories' texts from the embedded vector store's files (a Chroma server keeps its own)."""
    from app.knowledge.vectors import vacuum_embedded  # lazily, as in vector_store()

    if not current_app.config.get("CHROMA_URL") and current_app.config.get("CHROMA_PATH"):
        vacuum_embedded(current_app.config["CHROMA_PATH"])

