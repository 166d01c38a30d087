"""Indexing: passages in the database, vectors in Chroma, lexical rows; re-indexing, crash resume, sync."""

from __future__ import annotations

import uuid

from sqlalchemy import text

from app.extensions import db
from app.knowledge import lexical
from app.knowledge.chunking import CHUNKER_VERSION, PIECE_CHARS, pieces
from app.knowledge.indexing import index_document, index_knowledge_base, needs_indexing
from app.knowledge.library import delete_document, delete_knowledge_base, put_document, sync_folder, vector_store
from app.knowledge.search import retrieve
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage

LONG = "\n\n".join(f"## Part {i}\n\n" + f"Section {i} explains topic number {i}. " * 30 for i in range(8))


def add(kb, name="guide.md", body=LONG):
    document = put_document(kb, f"upload:{name}", name, body.encode())
    db.session.commit()
    return document


def vectors(kb, document):
    return vector_store().get(kb.collection, where={"document_id": document.id})


def vectorised(kb, document) -> set[int]:
    """The passages of a document that have their vectors (one per piece)."""
    return {v.metadata["passage_id"] for v in vectors(kb, document)}


def test_indexing_stores_passages_vectors_and_lexical_rows(knowledge_base):
    kb = knowledge_base()
    document = add(kb)
    index_knowledge_base.delay(kb.id)  # inline in tests
    db.session.refresh(document)
    assert document.status == "indexed" and document.passage_count > 5
    assert document.passages_done == document.passage_count
    assert len(vectorised(kb, document)) == document.passage_count == lexical.count(kb.id)
    passage = db.session.scalars(db.select(KnowledgePassage).order_by(KnowledgePassage.position)).first()
    assert passage.embedded.startswith("Part 0\n") or passage.embedded.startswith("guide")
    assert passage.meta == {"chunker_version": CHUNKER_VERSION, "passage_count": document.passage_count}
    # A passage longer than a piece has a vector per piece, each with the title and heading before it.
    assert len(passage.text) > PIECE_CHARS
    own = sorted(v.id for v in vectors(kb, document) if v.metadata["passage_id"] == passage.id)
    assert own == [f"passage-{passage.id}"] + [f"passage-{passage.id}-{n}" for n in range(1, len(pieces(passage.text)))]
    assert len(own) > 1 and len(vectors(kb, document)) > document.passage_count
    assert not needs_indexing(document)


def test_a_crash_mid_indexing_resumes_where_it_stopped(knowledge_base):
    kb = knowledge_base()
    document = add(kb, body=LONG * 3)
    assert index_document(document, max_batches=1) is False  # the process died after one batch
    db.session.refresh(document)
    assert document.status == "indexing" and 0 < document.passages_done < document.passage_count
    first_ids = {v.id for v in vectors(kb, document)}
    assert needs_indexing(document)
    index_knowledge_base.delay(kb.id)
    db.session.refresh(document)
    assert document.status == "indexed" and document.passages_done == document.passage_count
    assert first_ids < {v.id for v in vectors(kb, document)}  # the done batch was kept, not redone
    assert len(vectorised(kb, document)) == document.passage_count


def test_a_legacy_or_incomplete_index_is_made_again(knowledge_base):
    kb = knowledge_base()
    document = add(kb)
    index_knowledge_base.delay(kb.id)
    db.session.refresh(document)
    # An index from an older chunker: rows and vectors say version 1.
    db.session.execute(db.update(KnowledgePassage).values(chunker_version=1))
    document.chunker_version = 1
    db.session.commit()
    assert needs_indexing(document)
    index_knowledge_base.delay(kb.id)
    db.session.refresh(document)
    assert document.chunker_version == CHUNKER_VERSION and not needs_indexing(document)
    # Incomplete: a passage's vectors went missing.
    first = vectors(kb, document)[0].metadata["passage_id"]
    vector_store().delete(kb.collection, where={"passage_id": first})
    assert needs_indexing(document)
    index_knowledge_base.delay(kb.id)
    assert len(vectorised(kb, document)) == document.passage_count


def test_an_unreadable_or_oversized_file_fails_alone(knowledge_base, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe good file is read.")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (folder / "big.txt").write_text("x" * 2000)
    kb = knowledge_base(folder=str(folder))
    counts = sync_folder(kb, max_bytes=1000)
    assert counts["added"] == 1 and counts["failed"] == 2
    index_knowledge_base.delay(kb.id)
    documents = {d.source: d for d in db.session.scalars(db.select(KnowledgeDocument))}
    assert documents["folder:good.md"].status == "indexed"
    assert documents["folder:broken.pdf"].status == "failed" and "could not be read" in documents[
        "folder:broken.pdf"].error
    assert "limit" in documents["folder:big.txt"].error


def test_sync_adds_updates_and_deletes(knowledge_base, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAlpha text.")
    (folder / "b.md").write_text("# B\n\nBeta text.")
    kb = knowledge_base(folder=str(folder))
    assert sync_folder(kb)["added"] == 2
    index_knowledge_base.delay(kb.id)
    (folder / "a.md").write_text("# A\n\nAlpha text, changed.")
    (folder / "b.md").unlink()
    (folder / "c.md").write_text("# C\n\nGamma text.")
    counts = sync_folder(kb)
    assert (counts["added"], counts["updated"], counts["deleted"]) == (1, 1, 1)
    index_knowledge_base.delay(kb.id)
    titles = sorted(d.title for d in db.session.scalars(db.select(KnowledgeDocument)))
    assert titles == ["A", "C"]
    assert lexical.count(kb.id) == vector_store().count(kb.collection) == 2


def test_deleting_removes_passages_vectors_and_lexical_rows(knowledge_base):
    kb = knowledge_base()
    first, second = add(kb, "one.md"), add(kb, "two.md", LONG.replace("topic", "subject"))
    index_knowledge_base.delay(kb.id)
    total = lexical.count(kb.id)
    delete_document(first)
    db.session.commit()
    assert vectors(kb, first) == []
    assert lexical.count(kb.id) == total - first.passage_count == second.passage_count
    assert db.session.scalar(db.select(db.func.count()).where(KnowledgePassage.document_id == first.id)) == 0
    delete_knowledge_base(kb)
    assert vector_store().count(kb.collection) == 0
    assert db.session.scalar(db.select(db.func.count()).select_from(KnowledgePassage)) == 0
    if db.engine.dialect.name == "sqlite":
        assert db.session.scalar(text("SELECT count(*) FROM knowledge_fts")) == 0
        # ...and a search for its words finds nothing.
        assert db.session.scalar(text("SELECT count(*) FROM knowledge_fts WHERE knowledge_fts MATCH 'subject'")) == 0


def test_chroma_keeps_the_passages_vectors_but_none_of_their_text(app, tmp_path, minilm):
    # Deleted text must leave the disk (issue 10, defect 16): the passages' text is in the database only,
    # so Chroma's write log, which keeps records until its index is persisted, never holds any of it.
    app.config["CHROMA_PATH"] = str(tmp_path / "chroma")
    marker = f"MAUVE-MARMOT-{uuid.uuid4().hex}"
    with app.app_context():
        kb = KnowledgeBase(name="Private")
        db.session.add(kb)
        db.session.commit()
        document = add(kb, body=LONG.replace("topic number 3", f"the code {marker}"))
        index_knowledge_base.delay(kb.id)
        assert vector_store().count(kb.collection) >= document.passage_count > 5
        hits = retrieve([kb], "Section 3 explains the code", mode="semantic").kept
        assert marker in hits[0].passage.text  # found by meaning
        files = [path for path in (tmp_path / "chroma").rglob("*") if path.is_file()]
        assert files and not [path.name for path in files if marker.encode() in path.read_bytes()]
        delete_knowledge_base(kb)


def test_a_stopping_consumer_leaves_indexing_to_resume_later(app, knowledge_base):
    """Ctrl+C on a job consumer: indexing stops before its next batch, kept for the next consumer to resume."""
    from app import jobs

    kb = knowledge_base()
    document = add(kb, body=LONG * 3)
    assert index_document(document, max_batches=1) is False  # one batch in when the consumer is stopped
    done = document.passages_done
    queue = app.extensions["jobs"].huey
    consumer = jobs.StoppingConsumer(queue, workers=1, worker_type="thread")
    try:
        consumer.stop()  # what huey does on SIGINT (without waiting: nothing runs in this consumer)
        assert jobs.stopping()
        index_knowledge_base.delay(kb.id)
        db.session.refresh(document)
        assert (document.status, document.passages_done) == ("indexing", done)  # not one batch more
    finally:
        queue.consumer_stopping = False  # a consumer that starts again on this queue
    index_knowledge_base.delay(kb.id)
    db.session.refresh(document)
    assert document.status == "indexed" and document.passages_done == document.passage_count


def test_the_consumers_give_running_jobs_the_configured_time_after_ctrl_c(app, tmp_path):
    from app import jobs

    app.config.update(JOBS_IMMEDIATE=False, JOBS_SQLITE_PATH=str(tmp_path / "jobs.sqlite3"), JOBS_SHUTDOWN_SECONDS="7")
    queue = jobs._make_huey(app)  # what `flask jobs worker` and `huey_consumer wsgi.huey` consume from
    assert queue.create_consumer(workers=1, worker_type="thread").shutdown_timeout == 7.0
    assert queue.create_consumer(workers=1, worker_type="thread", shutdown_timeout=3).shutdown_timeout == 3  # -t 3
