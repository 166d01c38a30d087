"""Indexing as a background job: passages in the database first, then their vectors batch by batch.

Progress (passages done / total) is committed per batch, so the page shows it and a crash loses at most
one batch: the next run embeds only the passages without a vector. A document indexed by an older
chunker, or whose passages and vectors do not add up, is cut and embedded again.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from huey import crontab

from app.extensions import db, jobs
from app.jobs import stopping
from app.knowledge.chunking import CHUNKER_VERSION, chunk, embedded_text, pieces
from app.knowledge.library import folder_error, sync_folder, vector_store
from app.knowledge.names import index_text
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage
from app.models.base import utcnow

log = logging.getLogger(__name__)

BATCH = 32
# An "indexing" document untouched this long belongs to a run that died: the periodic check resumes it.
STALLED_AFTER = timedelta(minutes=2)


def needs_indexing(document: KnowledgeDocument) -> bool:
    """Tell whether a document's index is missing, incomplete, or made by an older chunker."""
    if document.status == "failed":
        return False
    if document.status != "indexed" or document.chunker_version != CHUNKER_VERSION:
        return True
    versions = db.session.execute(db.select(KnowledgePassage.chunker_version, db.func.count())
                                  .where(KnowledgePassage.document_id == document.id)
                                  .group_by(KnowledgePassage.chunker_version)).all()
    if [tuple(row) for row in versions] != ([(CHUNKER_VERSION, document.passage_count)]
                                            if document.passage_count else []):
        return True
    vectors = vector_store().get(document.knowledge_base.collection, where={"document_id": document.id})
    # A passage's pieces are written in one call, so each passage has all its vectors or none.
    return (len({v.metadata.get("passage_id") for v in vectors}) != document.passage_count
            or any(v.metadata.get("chunker_version") != CHUNKER_VERSION for v in vectors))


def _rechunk(document: KnowledgeDocument) -> None:
    kb = document.knowledge_base
    vector_store().delete(kb.collection, where={"document_id": document.id})
    db.session.execute(db.delete(KnowledgePassage).where(KnowledgePassage.document_id == document.id))
    pieces = chunk(document.content, kb.chunk_size, kb.chunk_overlap)
    for position, piece in enumerate(pieces):
        embedded = embedded_text(document.title, piece.heading, piece.text)
        db.session.add(KnowledgePassage(
            document_id=document.id, knowledge_base_id=kb.id, position=position, start=piece.start,
            end=piece.end, heading=piece.heading[:300], text=piece.text, embedded=embedded,
            names=index_text(embedded), chunker_version=CHUNKER_VERSION, vectorised=False,
            meta={"chunker_version": CHUNKER_VERSION, "passage_count": len(pieces)}))
    document.passage_count, document.passages_done = len(pieces), 0
    document.chunker_version, document.status, document.error = CHUNKER_VERSION, "indexing", None
    db.session.commit()


def index_document(document: KnowledgeDocument, max_batches: int | None = None) -> bool:
    """Index a document (or resume it); return whether it is complete. `max_batches` stops early, as a crash."""
    kb = document.knowledge_base
    resumable = (document.status == "indexing" and document.chunker_version == CHUNKER_VERSION
                 and db.session.scalar(db.select(db.func.count()).where(
                     KnowledgePassage.document_id == document.id)) == document.passage_count)
    if not resumable:
        _rechunk(document)
    store, batches = vector_store(), 0
    while True:
        batch = list(db.session.scalars(
            db.select(KnowledgePassage).where(KnowledgePassage.document_id == document.id,
                                              KnowledgePassage.vectorised.is_(False))
            .order_by(KnowledgePassage.position).limit(BATCH)))
        if not batch:
            break
        if (max_batches is not None and batches >= max_batches) or stopping():
            return False  # left "indexing": resume_indexing takes it up again (after STALLED_AFTER)
        records = [record for passage in batch for record in vector_records(document, passage)]
        store.upsert(kb.collection, [id_ for id_, _, _ in records], [text for _, text, _ in records],
                     [meta for _, _, meta in records], keep_text=False)
        for passage in batch:
            passage.vectorised = True
        document.passages_done = db.session.scalar(db.select(db.func.count()).where(
            KnowledgePassage.document_id == document.id, KnowledgePassage.vectorised.is_(True)))
        document.updated_at = utcnow()
        db.session.commit()
        batches += 1
    document.status = "indexed"
    document.passages_done = document.passage_count
    db.session.commit()
    return True


def vector_records(document: KnowledgeDocument, passage: KnowledgePassage) -> list[tuple[str, str, dict]]:
    """A passage's vectors (id, embedded text, metadata): one per piece, `passage-<id>` then `passage-<id>-<n>`."""
    texts = pieces(passage.text)
    embedded = [passage.embedded] if len(texts) == 1 else [
        embedded_text(document.title, passage.heading, text) for text in texts]
    return [(passage.vector_id + (f"-{n}" if n else ""), text, {
        "document_id": document.id, "passage_id": passage.id, "position": passage.position, "piece": n,
        "start": passage.start, "end": passage.end, "chunker_version": CHUNKER_VERSION,
        "passage_count": document.passage_count}) for n, text in enumerate(embedded)]


@jobs.task()
def index_knowledge_base(kb_id: int, max_batches: int | None = None) -> None:
    """Index every document of a knowledge base that needs it; one document's failure never stops the rest."""
    kb = db.session.get(KnowledgeBase, kb_id)
    if kb is None:
        return
    if kb.folder and kb.synced_at is None:
        problem = folder_error(kb.folder)
        if problem:  # a folder saved before the KNOWLEDGE_FOLDERS rule, or by hand: never read; Sync says why
            log.warning("knowledge base %s: folder not synced: %s", kb.id, problem)
        else:
            sync_folder(kb)
    for document_id in list(db.session.scalars(db.select(KnowledgeDocument.id).where(
            KnowledgeDocument.knowledge_base_id == kb_id).order_by(KnowledgeDocument.id))):
        document = db.session.get(KnowledgeDocument, document_id)
        if document is None or not needs_indexing(document):
            continue
        if stopping():
            return
        try:
            index_document(document, max_batches=max_batches)
        except Exception as error:  # an embedder or store failure is this document's, not the others'
            log.exception("indexing document %s failed", document_id)
            db.session.rollback()
            document = db.session.get(KnowledgeDocument, document_id)
            if document is not None:
                document.status, document.error = "failed", f"{type(error).__name__}: {error}"
                db.session.commit()


def queue_indexing(kb: KnowledgeBase) -> None:
    index_knowledge_base.delay(kb.id)


@jobs.periodic(crontab(minute="*"))
def resume_indexing() -> None:
    """After a restart: queue the knowledge bases left pending, stalled, unsynced, or on an older chunker."""
    stalled = utcnow() - STALLED_AFTER
    waiting = db.select(KnowledgeDocument.knowledge_base_id).where(
        (KnowledgeDocument.status.in_(("pending", "indexing")) & (KnowledgeDocument.updated_at < stalled))
        | ((KnowledgeDocument.status == "indexed") & (KnowledgeDocument.chunker_version != CHUNKER_VERSION)))
    unsynced = db.select(KnowledgeBase.id).where(KnowledgeBase.folder.is_not(None),
                                                 KnowledgeBase.synced_at.is_(None))
    for kb_id in sorted(set(db.session.scalars(waiting)) | set(db.session.scalars(unsynced))):
        index_knowledge_base.delay(kb_id)
