"""Hybrid retrieval: semantic (Chroma) and lexical (full text) rankings fused by their normalised scores.

Order of operations, each visible in the retrieval console:
1. each retriever ranks up to `candidates` passages on its own (no threshold: a weak semantic score can
   still be a strong lexical match);
2. fusion: each retriever's scores min-max normalised over its candidates, averaged (1.0 = first in both);
3. at most `per_document` passages per document (the best ones), except that a passage in the top 3 of
   either retriever is never dropped for it;
4. the `limit` best;
5. the evidence verdict (app/knowledge/evidence.py), from the raw signals, never from the fused score: the
   result keeps its passages, and callers say "the documents do not answer this" when it is not answerable.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Select
from sqlalchemy.orm import defer, joinedload

from app.extensions import db
from app.knowledge import lexical
from app.knowledge.evidence import NOTHING, Evidence, Floor, judge, units
from app.knowledge.library import vector_store
from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage
from app.models.knowledge import PASSAGE_PREFIX

if TYPE_CHECKING:
    from app.knowledge.vectors import VectorStore

T = TypeVar("T")

# Fusion is a weighted sum of the two retrievers' normalised scores (a convex combination): unlike reciprocal
# rank fusion it keeps how far ahead a retriever's first choice is, so a name that only the lexical search
# finds, far ahead of the rest, is not outranked by passages both retrievers rank middling (docs/knowledge.md).
LEXICAL_WEIGHT = 0.5
CANDIDATES = 50
PER_DOCUMENT = 3
# The longest query the console and the search tool take: a search is a few words, and the embedder reads
# 256 word pieces at most.
MAX_QUERY_CHARS = 1000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# A passage this high in either ranking is kept whatever the per-document cap says: the cap is for variety,
# and dropping a retriever's own first choices cost answers (a lexical #1, 4th of its document).
PROTECTED_RANK = 3
RETRIEVERS = ("semantic", "lexical")
# A long passage has a vector per piece (app/knowledge/chunking.py): asking for this many vectors per candidate
# wanted still yields about `candidates` distinct passages.
PIECES_ASKED = 3


@dataclass
class Scored:
    """A passage with its ranks (1 = best; None = not found by that retriever) and scores."""

    passage: KnowledgePassage
    semantic_rank: int | None = None
    semantic_score: float | None = None  # 1 - cosine distance
    lexical_rank: int | None = None
    lexical_score: float | None = None
    fused: float = 0.0
    dropped: str = ""  # why the console shows it struck out: "per-document cap", "over the limit"
    rank: int | None = None

    def protected(self) -> bool:
        """Whether a retriever ranked it so high that the per-document cap keeps it."""
        return any(rank is not None and rank <= PROTECTED_RANK for rank in (self.semantic_rank, self.lexical_rank))


@dataclass
class Retrieval:
    """The passages kept (hybrid order), every candidate with its scores and fate, and the evidence verdict."""

    kept: list[Scored]
    considered: list[Scored] = field(default_factory=list)
    evidence: Evidence = NOTHING

    def ranking(self, retriever: str) -> list[Scored]:
        """The candidates in one retriever's own order ("semantic" or "lexical"), for the console."""
        if retriever not in RETRIEVERS:
            raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}; got {retriever!r}")
        found = [s for s in self.considered if getattr(s, f"{retriever}_rank") is not None]
        return sorted(found, key=lambda s: getattr(s, f"{retriever}_rank"))


def query_problem(query: str) -> str | None:
    """Say what is wrong with a search query (empty, too long, control characters), or None."""
    if not query.strip():
        return "Say what to search for."
    if len(query) > MAX_QUERY_CHARS:
        return f"Keep the query under {MAX_QUERY_CHARS:,} characters: a search is a few words or a question."
    if _CONTROL.search(query):
        return "The query has control characters (binary data?): search with words."
    return None


def fuse(semantic: list[tuple[int, float]], lexical_hits: list[tuple[int, float]],
         lexical_weight: float = LEXICAL_WEIGHT) -> dict[int, float]:
    """Fuse two rankings of (id, score): each retriever's scores min-max normalised over its own candidates (its
    best 1, its worst 0, an id it did not find 0), then averaged with `lexical_weight`; first in both scores 1.0."""
    fused: dict[int, float] = {}
    for ranking, weight in ((semantic, 1 - lexical_weight), (lexical_hits, lexical_weight)):
        if not ranking:
            continue
        high, low = max(score for _, score in ranking), min(score for _, score in ranking)
        for item, score in ranking:
            share = (score - low) / (high - low) if high > low else 1.0
            fused[item] = fused.get(item, 0.0) + weight * share
    return fused


def _passages(ids) -> Select:
    """The candidates' rows in one query, with what callers show of their document (never its whole text)."""
    return (db.select(KnowledgePassage).where(KnowledgePassage.id.in_(ids))
            .options(defer(KnowledgePassage.embedded), defer(KnowledgePassage.meta),
                     joinedload(KnowledgePassage.document).load_only(
                         KnowledgeDocument.title, KnowledgeDocument.passage_count)))


def _semantic(store: VectorStore, kbs: list[KnowledgeBase], query: str, candidates: int) -> list[tuple[int, float]]:
    """(passage id, 1 - cosine distance of its best piece) best first, over every knowledge base; the query is
    embedded once."""
    vector = store.embedder.embed([query])[0]
    best: dict[int, float] = {}
    for kb in kbs:
        for hit in store.nearest(kb.collection, vector, n=candidates * PIECES_ASKED):
            if hit.id.startswith(PASSAGE_PREFIX):  # passage-<id>, or passage-<id>-<piece>
                passage_id = int(hit.id.removeprefix(PASSAGE_PREFIX).partition("-")[0])
                best[passage_id] = max(best.get(passage_id, -1.0), 1 - hit.distance)
    return sorted(best.items(), key=lambda pair: -pair[1])[:candidates]


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
             floor: Floor = Floor(), candidates: int = CANDIDATES, mode: str = "hybrid") -> Retrieval:  # noqa: B008
    """Return the passages for a query with the evidence verdict; `mode` "semantic" or "lexical" uses one
    retriever (benchmarks)."""
    if not kbs or not query.strip():
        return Retrieval([])
    # The two retrievers run side by side: the query's embedding (torch, or an HTTP call) and the full-text
    # search (SQLite) both release the GIL, so a search costs about the slower of the two, not their sum.
    semantic_hits = _beside(_semantic, vector_store(), kbs, query, candidates) if mode != "lexical" else None
    lexical_hits = lexical.search([kb.id for kb in kbs], query, candidates) if mode != "semantic" else []
    semantic = semantic_hits.result() if semantic_hits is not None else []
    fused = fuse(semantic, lexical_hits)
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
    result = Retrieval(select(ordered, per_document, limit), ordered)
    result.evidence = _evidence(kbs, query, result, floor)
    return result


def select(ordered: list[Scored], per_document: int, limit: int) -> list[Scored]:
    """Keep the best `limit` of the fused order, at most `per_document` of one document except those a
    retriever ranked in its top 3; each entry gets its rank, or why it was dropped."""
    per_doc: dict[int, int] = {}
    kept: list[Scored] = []
    for entry in ordered:
        document = entry.passage.document_id
        if per_doc.get(document, 0) >= per_document and not entry.protected():
            entry.dropped = "per-document cap"
            continue
        per_doc[document] = per_doc.get(document, 0) + 1
        if len(kept) >= limit:
            entry.dropped = "over the limit"
            continue
        entry.rank = len(kept) + 1
        kept.append(entry)
    return kept


def _evidence(kbs: list[KnowledgeBase], query: str, result: Retrieval, floor: Floor) -> Evidence:
    by_meaning, by_words = result.ranking("semantic"), result.ranking("lexical")
    tokens = [token for unit in units(query) for token in unit.tokens()]
    return judge(query, by_meaning[0].semantic_score if by_meaning else None,
                 by_words[0].lexical_score if by_words else None,
                 lexical.present([kb.id for kb in kbs], tokens), floor)
