"""Knowledge bases and their documents: add, update from a folder, delete (rows, vectors, lexical rows)."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from flask import current_app

from app.database import mark_purged
from app.extensions import db
from app.knowledge.parsing import MAX_BYTES, UnreadableDocument, kind_of, parse
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage
from app.models.base import utcnow

log = logging.getLogger(__name__)
MAX_FOLDER = 500  # KnowledgeBase.folder
MAX_SOURCE = 600  # KnowledgeDocument.source


def vector_store():
    """The app's Chroma store (shared with memories)."""
    from app.knowledge.memories import vector_store as store

    return store()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def put_document(kb: KnowledgeBase, source: str, filename: str, data: bytes,
                 max_bytes: int = MAX_BYTES) -> KnowledgeDocument:
    """Add or update the document of `source` from a file's bytes; an unreadable file becomes a failed document.

    Returns the document, pending indexing when its text changed; the caller commits.
    """
    document = db.session.scalar(db.select(KnowledgeDocument).where(
        KnowledgeDocument.knowledge_base_id == kb.id, KnowledgeDocument.source == source))
    if document is None:
        document = KnowledgeDocument(knowledge_base_id=kb.id, source=source, title=Path(filename).name[:300])
        db.session.add(document)
    try:
        title, text = parse(filename, data, max_bytes)
    except UnreadableDocument as error:
        if document.id is not None:
            _remove_passages(kb, document)
        document.status, document.error, document.content, document.content_hash = "failed", str(error), "", ""
        document.passage_count = document.passages_done = 0
        db.session.flush()
        return document
    digest = content_hash(title + "\n" + text)
    if digest != document.content_hash or document.status == "failed":
        document.title, document.content, document.content_hash = title, text, digest
        document.status, document.error = "pending", None
    db.session.flush()
    return document


def allowed_folders() -> list[Path]:
    """The folders knowledge bases may sync from: Skilldesk's own docs/ and those of KNOWLEDGE_FOLDERS."""
    configured = str(current_app.config.get("KNOWLEDGE_FOLDERS") or "")
    folders = [Path(current_app.root_path).parent / "docs"]
    folders += [Path(part.strip()) for part in configured.split(os.pathsep) if part.strip()]
    return [folder.resolve() for folder in folders]


def folder_error(folder: str) -> str | None:
    """Say why a folder may not be synced (not absolute, missing, outside the allowed ones), or None."""
    path = Path(folder)
    if not path.is_absolute():
        return "Give the folder's absolute path on the server."
    if len(folder) > MAX_FOLDER:
        return f"Give a folder path of at most {MAX_FOLDER} characters."
    real = path.resolve()  # `..` and symlinks resolved before the check, not after
    allowed = allowed_folders()
    if not any(real == root or real.is_relative_to(root) for root in allowed):
        return ("Knowledge bases sync only from Skilldesk's docs/ and the folders of KNOWLEDGE_FOLDERS ("
                + ", ".join(str(root) for root in allowed) + ").")
    if not real.is_dir():
        return f"{folder} is not a folder on the server."
    return None


def sync_folder(kb: KnowledgeBase, max_bytes: int = MAX_BYTES) -> dict[str, int]:
    """Mirror the knowledge base's folder: add new files, update changed ones, delete vanished ones.

    One file's failure (too big, unreadable) is recorded on its document; the others go on. A file
    whose real path is outside the folder (a symlink out of it), or whose path is longer than a source
    can hold, is skipped, never read. Commits.
    """
    if not kb.folder:
        raise ValueError("This knowledge base has no folder to sync.")
    root = Path(kb.folder)
    if not root.is_dir():
        raise ValueError(f"{kb.folder} is not a folder on the server.")
    real_root = root.resolve()
    counts = {"added": 0, "updated": 0, "deleted": 0, "failed": 0, "unchanged": 0, "skipped": 0}
    seen: set[str] = set()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or kind_of(path.name) is None:
            continue
        source = f"folder:{path.relative_to(root).as_posix()}"
        if not path.resolve().is_relative_to(real_root) or len(source) > MAX_SOURCE:
            counts["skipped"] += 1
            log.warning("skipped %s: it links outside %s, or its path is too long to keep", path, root)
            continue
        seen.add(source)
        existed = db.session.scalar(db.select(KnowledgeDocument.content_hash).where(
            KnowledgeDocument.knowledge_base_id == kb.id, KnowledgeDocument.source == source))
        try:
            data = path.read_bytes() if path.stat().st_size <= max_bytes else b"\0" * (max_bytes + 1)
        except OSError as error:
            data = b""
            log.warning("could not read %s: %s", path, error)
        document = put_document(kb, source, path.name, data, max_bytes)
        if document.status == "failed":
            counts["failed"] += 1
        elif existed is None:
            counts["added"] += 1
        elif existed != document.content_hash:
            counts["updated"] += 1
        else:
            counts["unchanged"] += 1
    for document in list(db.session.scalars(db.select(KnowledgeDocument).where(
            KnowledgeDocument.knowledge_base_id == kb.id, KnowledgeDocument.source.startswith("folder:")))):
        if document.source not in seen:
            delete_document(document)
            counts["deleted"] += 1
    kb.synced_at = utcnow()
    db.session.commit()
    if counts["deleted"]:
        clear_deleted_text()
    return counts


def _remove_passages(kb: KnowledgeBase, document: KnowledgeDocument) -> None:
    vector_store().delete(kb.collection, where={"document_id": document.id})
    # The lexical rows go with the passages (a trigger on SQLite, a generated column on PostgreSQL).
    db.session.execute(db.delete(KnowledgePassage).where(KnowledgePassage.document_id == document.id))


def delete_document(document: KnowledgeDocument) -> None:
    """Delete a document with its passages, their vectors and lexical rows; the caller commits.

    Deleted on disk too: once committed, SQLite checkpoints its WAL and the vector store vacuums, as after a
    chat's purge. Chats that retrieved its passages keep their quotes (the confirmation says so).
    """
    _remove_passages(document.knowledge_base, document)
    db.session.delete(document)
    db.session.flush()
    mark_purged()


def delete_knowledge_base(kb: KnowledgeBase) -> None:
    """Delete a knowledge base, its documents, passages, vectors and lexical rows; commits."""
    vector_store().drop(kb.collection)
    db.session.execute(db.delete(KnowledgePassage).where(KnowledgePassage.knowledge_base_id == kb.id))
    db.session.execute(db.delete(KnowledgeDocument).where(KnowledgeDocument.knowledge_base_id == kb.id))
    db.session.delete(kb)
    mark_purged()
    db.session.commit()
    clear_deleted_text()


def clear_deleted_text() -> None:
    """After deleting documents (committed): clear their text from the index files, not only their rows.

    FTS5 keeps deleted tokens in its segments until they are merged, and embedded Chroma keeps deleted
    records' texts in its files until vacuumed (the memories' purge uses the same job).
    """
    from sqlalchemy import text

    from app.knowledge.memories import vacuum_vectors

    if db.engine.dialect.name == "sqlite":
        db.session.execute(text("INSERT INTO knowledge_fts(knowledge_fts) VALUES ('optimize')"))
        mark_purged()  # the merged segments freed the old ones' pages: checkpoint them out of the WAL too
        db.session.commit()
    vacuum_vectors.delay()


def usable_bases(names: list[str], role: str) -> list[KnowledgeBase]:
    """The named knowledge bases this role may search (all usable ones when no names are given)."""
    query = db.select(KnowledgeBase).order_by(KnowledgeBase.id)
    if names:
        query = query.where(KnowledgeBase.name.in_(names))
    return [kb for kb in db.session.scalars(query) if kb.usable_by(role)]
