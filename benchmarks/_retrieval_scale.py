"""The 10k-passage set of benchmarks/retrieval.py, built in about a minute instead of MiniLM's eleven.

The set is copies of docs/ under other titles (as before), cut into passages and written to the lexical index
exactly as the indexing job does. Their vectors are not embedded again: a copy's pieces differ from the
original's only by the "(copy N)" in the title line, so each gets its original's vector plus Gaussian noise
sized so that it sits as far from the original as a real re-titled copy does (measured in the same run on a
sample embedded for real, and printed). Embedding them all would measure MiniLM (which the benchmark measures
apart), not the search.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from app.extensions import db
from app.knowledge.embeddings import Embedder
from app.knowledge.indexing import index_document, vector_records
from app.knowledge.library import put_document, vector_store
from app.knowledge.vectors import SkilldeskEmbeddingFunction, collection_configuration, collection_name
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage

SAMPLE = 48  # copy pieces embedded for real, to size the noise


def _collection(kb: KnowledgeBase):
    store = vector_store()
    return store.client.get_or_create_collection(
        collection_name(kb.collection), embedding_function=SkilldeskEmbeddingFunction(store.embedder),
        configuration=collection_configuration(keeps_text=False))


def _original_vectors(docs: KnowledgeBase) -> dict[tuple[int, int, int], np.ndarray]:
    """(document id, passage position, piece) → vector, for every piece of the docs base."""
    got = _collection(docs).get(include=["embeddings", "metadatas"])
    return {(m["document_id"], m["position"], m.get("piece", 0)): np.asarray(v, dtype=np.float32)
            for m, v in zip(got["metadatas"], got["embeddings"], strict=True)}


def _noise_scale(originals, pairs: list[tuple[tuple[int, int, int], str]], embedder: Embedder) -> tuple[float, float]:
    """The per-dimension noise that puts a vector as far from its original as a real copy's embedding is."""
    real = np.asarray(embedder.embed([text for _, text in pairs]), dtype=np.float32)
    cosines = [float(np.dot(originals[key], vector)) for (key, _), vector in zip(pairs, real, strict=True)]
    target = statistics.median(cosines)
    dimensions = real.shape[1]
    # For unit u and noise n ~ N(0, s^2 I): cos(u, u + n) ≈ 1 / sqrt(1 + d s^2).
    return float(np.sqrt(max(1 / target**2 - 1, 0.0) / dimensions)), target


def build(docs: KnowledgeBase, target: int, embedder: Embedder, seed: int = 7) -> dict[str, float]:
    """Grow the database to `target` passages with a "Scale" base of copies; return what it measured."""
    started = time.perf_counter()
    scale = KnowledgeBase(name="Scale", roles=["admin"])
    db.session.add(scale)
    db.session.commit()
    sources = list(db.session.scalars(db.select(KnowledgeDocument).where(
        KnowledgeDocument.knowledge_base_id == docs.id, KnowledgeDocument.status == "indexed")))
    count = db.session.scalar(db.select(db.func.count()).select_from(KnowledgePassage))
    copy = 0
    while count < target:
        copy += 1
        for document in sources:
            put_document(scale, f"upload:copy{copy}-{document.source}", f"copy{copy}-{document.id}.md",
                         f"# {document.title} (copy {copy})\n\n{document.content}".encode())
        db.session.commit()
        count = db.session.scalar(db.select(db.func.count()).select_from(KnowledgePassage)) + sum(
            d.passage_count for d in sources)  # what the copies will add, roughly
        for document in db.session.scalars(db.select(KnowledgeDocument).where(
                KnowledgeDocument.knowledge_base_id == scale.id, KnowledgeDocument.status == "pending")):
            index_document(document, max_batches=0)  # cut and written (lexical rows too), no vector yet
        count = db.session.scalar(db.select(db.func.count()).select_from(KnowledgePassage))
    originals = _original_vectors(docs)
    original_of = {f"upload:copy{c}-{d.source}": d for d in sources for c in range(1, copy + 1)}
    last_position = {d.id: d.passage_count - 1 for d in sources}
    copies = db.session.scalars(db.select(KnowledgeDocument).where(KnowledgeDocument.knowledge_base_id == scale.id))
    records = []
    for document in list(copies):
        source = original_of[document.source]
        own = db.select(KnowledgePassage).where(KnowledgePassage.document_id == document.id)
        for passage in db.session.scalars(own):
            for id_, text, meta in vector_records(document, passage):
                key = (source.id, min(passage.position, last_position[source.id]), meta["piece"])
                if key not in originals:
                    key = (key[0], key[1], 0)
                records.append((id_, text, meta, key))
    rng = np.random.default_rng(seed)
    sample = [records[i] for i in rng.choice(len(records), size=min(SAMPLE, len(records)), replace=False)]
    sigma, cosine = _noise_scale(originals, [(key, text) for _, text, _, key in sample], embedder)
    collection, step = _collection(scale), vector_store().client.get_max_batch_size()
    for at in range(0, len(records), step):
        chunk = records[at:at + step]
        vectors = np.stack([originals[key] for *_, key in chunk])
        vectors = vectors + rng.normal(0, sigma, vectors.shape).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        collection.upsert(ids=[r[0] for r in chunk], embeddings=list(vectors), metadatas=[r[2] for r in chunk])
    db.session.execute(db.update(KnowledgePassage).where(KnowledgePassage.knowledge_base_id == scale.id)
                       .values(vectorised=True))
    db.session.execute(db.update(KnowledgeDocument).where(KnowledgeDocument.knowledge_base_id == scale.id)
                       .values(status="indexed", passages_done=KnowledgeDocument.passage_count))
    db.session.commit()
    return {"scale": scale, "passages": db.session.scalar(db.select(db.func.count()).select_from(KnowledgePassage)),
            "vectors": len(records) + len(originals), "copy_cosine": cosine, "seconds": time.perf_counter() - started}
