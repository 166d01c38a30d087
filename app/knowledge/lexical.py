"""Lexical retrieval: SQLite FTS5 ranked by bm25, or PostgreSQL full text ranked by ts_rank_cd.

Both indexes are kept by the database itself (triggers on SQLite, a generated column on PostgreSQL; see the
knowledge-bases migration), so a deleted passage leaves no lexical row behind.
"""

from __future__ import annotations

import re

from sqlalchemy import text

from app.extensions import db

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 32


def terms(query: str) -> list[str]:
    """The query's words, lowered and deduplicated, in order: matched as alternatives (OR), ranked by score."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        seen.setdefault(word, None)
    return list(seen)[:MAX_TERMS]


def _telling(words: list[str]) -> list[str]:
    """Leave out the words found in at least half of all passages ("the", "and", "it", …), unless all are.

    FTS5's bm25 gives such a term an IDF of 1e-6 (log((N - n + 0.5) / (n + 0.5)) <= 0 is clamped), so it
    cannot change the order, yet matching it visits most rows: at 10,000 passages the search took about
    twice as long, for the same top 10 on all 63 benchmark questions. Only words whose exact form is an
    indexed term are looked up (a word the stemmer changes, "runs" → "run", is kept).
    """
    marks = ",".join(f":w{i}" for i in range(len(words)))
    common = set(db.session.scalars(text(
        f"SELECT term FROM knowledge_fts_terms WHERE term IN ({marks}) "
        "AND doc * 2 >= (SELECT count(*) FROM knowledge_passages)"),  # the FTS table's rows, by an index
        {f"w{i}": w for i, w in enumerate(words)}))
    return [word for word in words if word not in common] or words


def search(knowledge_base_ids: list[int], query: str, limit: int = 50) -> list[tuple[int, float]]:
    """Return (passage id, score) best first; a higher score is a better match on both dialects."""
    words = terms(query)
    if not words or not knowledge_base_ids:
        return []
    ids = ",".join(str(int(kb)) for kb in knowledge_base_ids)
    if db.engine.dialect.name == "postgresql":
        # to_tsquery with '|' (OR): plainto_tsquery would want every word in one passage.
        expression = " | ".join(f"'{word}'" for word in words)
        rows = db.session.execute(text(
            "SELECT id, ts_rank_cd(search_vector, q) AS score "
            "FROM knowledge_passages, to_tsquery('english', :q) AS q "
            f"WHERE knowledge_base_id IN ({ids}) AND search_vector @@ q "
            "ORDER BY score DESC, id LIMIT :limit"), {"q": expression, "limit": limit})
    else:
        expression = " OR ".join('"' + word.replace('"', '""') + '"' for word in _telling(words))
        # `rank` is bm25 with FTS5's own sorter: the same order as ORDER BY bm25(...), cheaper.
        rows = db.session.execute(text(
            "SELECT rowid, rank FROM knowledge_fts "
            f"WHERE knowledge_fts MATCH :q AND knowledge_base_id IN ({ids}) "
            "ORDER BY rank LIMIT :limit"), {"q": expression, "limit": limit})
        return [(int(row[0]), -float(row[1])) for row in rows]  # bm25: lower is better
    return [(int(row[0]), float(row[1])) for row in rows]


def count(knowledge_base_id: int) -> int:
    """How many lexical rows a knowledge base has (for tests and the admin page)."""
    if db.engine.dialect.name == "postgresql":
        sql = "SELECT count(*) FROM knowledge_passages WHERE knowledge_base_id = :kb AND search_vector IS NOT NULL"
    else:
        sql = "SELECT count(*) FROM knowledge_fts WHERE knowledge_base_id = :kb"
    return int(db.session.scalar(text(sql), {"kb": knowledge_base_id}) or 0)
