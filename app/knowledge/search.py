"""Hybrid retrieval: semantic (Chroma) and lexical (full text) rankings fused by reciprocal rank fusion.

Order of operations, each visible in the retrieval console:
1. each retriever ranks up to `candidates` passages on its own (no threshold: a weak semantic score can
   still be a strong lexical match);
2. reciprocal rank fusion, normalised so 1.0 means first in both rankings;
3. at most `per_document` passages per document (the best ones);
4. the minimum score, applied to the fused score only;
5. the `limit` best.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Select
from sqlalchemy.orm import defer, joinedload

from app.extensions import db
from app.knowledge import lexical
from app.knowledge.library import vector_store
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage
from app.models.knowledge import PASSAGE_PREFIX

if TYPE_CHECKING:
    from app.knowledge.vectors import VectorStore

T = TypeVar("T")

RRF_K = 60
CANDIDATES = 50
PER_DOCUMENT = 3


@dataclass
class Scored:
    """A passage with its ranks (1 = best; None = not found by that retriever) and scores."""

    passage: KnowledgePassage
    semantic_rank: int | None = None
    semantic_score: float | None = None  # 1 - cosine distance
    lexical_rank: int | None = None
    lexical_score: float | None = None
    fused: float = 0.0
    dropped: str = ""  # why the console shows it struck out: "per-document cap", "below minimum score"
    rank: int | None = None


@dataclass
class Retrieval:
    kept: list[Scored]
    considered: list[Scored] = field(default_factory=list)


def fuse(semantic: list[int], lexical_ids: list[int], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion of two rankings of ids, normalised so that first in both scores 1.0."""
    scores: dict[int, float] = {}
    for ranking in (semantic, lexical_ids):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    best = 2.0 / (k + 1)
    return {item: score / best for item, score in scores.items()}


def _passages(ids) -> Select:
    """The candidates' rows in one query, with what callers show of their document (never its whole text)."""
    return (db.select(KnowledgePassage).where(KnowledgePassage.id.in_(ids))
            .options(defer(KnowledgePassage.embedded), defer(KnowledgePassage.meta),
                     joinedload(KnowledgePassage.document).load_only(
                         KnowledgeDocument.title, KnowledgeDocument.passage_count)))


def _semantic(store: VectorStore, kbs: list[KnowledgeBase], query: str, candidates: int) -> list[tuple[int, float]]:
    """(passage id, 1 - cosine distance) best first, over every knowledge base; the query is embedded once."""
    vector = store.embedder.embed([query])[0]
    found: list[tuple[int, float]] = []
    for kb in kbs:
        found += [(int(hit.id.removeprefix(PASSAGE_PREFIX)), 1 - hit.distance)
                  for hit in store.nearest(kb.collection, vector, n=candidates) if hit.id.startswith(PASSAGE_PREFIX)]
    found.sort(key=lambda pair: -pair[1])
    return found[:candidates]


_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _beside(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Run `fn` on this process's search thread pool (made again after a fork: threads do not survive one)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="semantic-search"))
        return _pool[1].submit(fn, *args)


def retrieve(kbs: list[KnowledgeBase], query: str, *, limit: int = 6, per_document: int = PER_DOCUMENT,
             min_score: float = 0.0, candidates: int = CANDIDATES, mode: str = "hybrid") -> Retrieval:
    """Return the passages for a query; `mode` "semantic" or "lexical" uses one retriever (benchmarks)."""
    if not kbs or not query.strip():
        return Retrieval([])
    # The two retrievers run side by side: the query's embedding (torch, or an HTTP call) and the full-text
    # search (SQLite) both release the GIL, so a search costs about the slower of the two, not their sum.
    semantic_hits = _beside(_semantic, vector_store(), kbs, query, candidates) if mode != "lexical" else None
    lexical_hits = lexical.search([kb.id for kb in kbs], query, candidates) if mode != "semantic" else []
    semantic = semantic_hits.result() if semantic_hits is not None else []
    fused = fuse([pid for pid, _ in semantic], [pid for pid, _ in lexical_hits])
    passages = {p.id: p for p in db.session.scalars(_passages(fused))} if fused else {}
    scored: dict[int, Scored] = {}
    for ranking, kind in ((semantic, "semantic"), (lexical_hits, "lexical")):
        for rank, (pid, score) in enumerate(ranking, start=1):
            if pid not in passages:
                continue  # a vector whose row is gone never surfaces
            entry = scored.setdefault(pid, Scored(passages[pid], fused=fused[pid]))
            setattr(entry, f"{kind}_rank", rank)
            setattr(entry, f"{kind}_score", score)
    ordered = sorted(scored.values(), key=lambda s: (-s.fused, s.passage.id))
    per_doc: dict[int, int] = {}
    kept: list[Scored] = []
    for entry in ordered:
        document = entry.passage.document_id
        if per_doc.get(document, 0) >= per_document:
            entry.dropped = "per-document cap"
            continue
        per_doc[document] = per_doc.get(document, 0) + 1
        if entry.fused < min_score:
            entry.dropped = "below minimum score"
            continue
        if len(kept) >= limit:
            entry.dropped = "over the limit"
            continue
        entry.rank = len(kept) + 1
        kept.append(entry)
    return Retrieval(kept, ordered)
