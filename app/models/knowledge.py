"""Knowledge bases: documents cut into overlapping passages, found by meaning (Chroma) and by words (full text)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

DOCUMENT_STATUSES = ("pending", "indexing", "indexed", "failed")
PASSAGE_PREFIX = "passage-"


class KnowledgeBase(db.Model):
    """A set of documents an agent's knowledge skill may search, for the roles it names."""

    __tablename__ = "knowledge_bases"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    description: Mapped[str] = mapped_column(String(300), default="")
    roles: Mapped[list] = mapped_column(JSON, default=lambda: ["admin", "user"])
    chunk_size: Mapped[int] = mapped_column(default=1000)
    chunk_overlap: Mapped[int] = mapped_column(default=150)
    # A folder on the server that `sync` mirrors (adds, updates, deletes); None for uploads only.
    folder: Mapped[str | None] = mapped_column(String(500))
    synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    documents: Mapped[list[KnowledgeDocument]] = relationship(
        back_populates="knowledge_base", cascade="all, delete-orphan", passive_deletes=True)

    def usable_by(self, role: str) -> bool:
        return role in (self.roles or [])

    @property
    def collection(self) -> str:
        """The Chroma collection holding this knowledge base's passage vectors."""
        return f"knowledge-{self.id}"


class KnowledgeDocument(db.Model):
    """A document's extracted text and how far its indexing got."""

    __tablename__ = "knowledge_documents"

    id: Mapped[int] = mapped_column(primary_key=True)
    knowledge_base_id: Mapped[int] = mapped_column(ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
                                                   index=True)
    title: Mapped[str] = mapped_column(String(300))
    # "folder:relative/path.md" for a synced file, "upload:name.pdf" for an upload.
    source: Mapped[str] = mapped_column(String(600))
    content: Mapped[str] = mapped_column(Text, default="")
    content_hash: Mapped[str] = mapped_column(String(64), default="")
    status: Mapped[str] = mapped_column(String(12), default="pending")
    error: Mapped[str | None] = mapped_column(Text)
    passage_count: Mapped[int] = mapped_column(default=0)
    passages_done: Mapped[int] = mapped_column(default=0)
    chunker_version: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    knowledge_base: Mapped[KnowledgeBase] = relationship(back_populates="documents")


class KnowledgePassage(db.Model):
    """One overlapping piece of a document; `embedded` (title, heading, text) is what both indexes see, and the
    lexical one `names` too."""

    __tablename__ = "knowledge_passages"
    __table_args__ = (Index("ix_knowledge_passages_document_position", "document_id", "position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("knowledge_documents.id", ondelete="CASCADE"))
    knowledge_base_id: Mapped[int] = mapped_column(ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
                                                   index=True)
    position: Mapped[int]
    start: Mapped[int]
    end: Mapped[int]
    heading: Mapped[str] = mapped_column(String(300), default="")
    text: Mapped[str] = mapped_column(Text)
    embedded: Mapped[str] = mapped_column(Text)
    # The forms of the compound names in `embedded` (app/knowledge/names.py); the lexical index reads both.
    names: Mapped[str] = mapped_column(Text, default="", server_default="")
    chunker_version: Mapped[int]
    # In Chroma yet: a crashed indexing resumes from the first passage without a vector.
    vectorised: Mapped[bool] = mapped_column(default=False)
    meta: Mapped[dict] = mapped_column(JSON, default=dict)

    document: Mapped[KnowledgeDocument] = relationship()

    @property
    def vector_id(self) -> str:
        """The id of the passage's vector in its knowledge base's collection (the search reads the id back)."""
        return f"{PASSAGE_PREFIX}{self.id}"
