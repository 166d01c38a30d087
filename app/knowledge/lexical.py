"""Lexical retrieval: SQLite FTS5 ranked by bm25, or PostgreSQL full text ranked by ts_rank_cd.

Both indexes are kept by the database itself (triggers on SQLite, a generated column on PostgreSQL; see the
knowledge-bases migration), so a deleted passage leaves no lexical row behind.
"""

from __future__ import annotations

import re

from sqlalchemy import text

from app.extensions import db
from app.knowledge.names import forms, names_in, outside_names

_WORD = re.compile(r"[^\W_]+")  # letters and digits: `_` joins the parts of a name, as in both tokenizers
MAX_TERMS = 32


def terms(query: str) -> list[str]:
    """The query's terms, matched as alternatives (OR) and ranked by score: the forms of its names first
    (`SKILLDESK_OUTBOUND_ALLOWED_HOSTS` → `outboundallowedhosts`, then its parts), then its other words,
    lowered and deduplicated, in order. Every term is one token for FTS5 and for `to_tsquery`."""
    seen: dict[str, None] = {}
    for name in names_in(query):
        seen.update(dict.fromkeys(forms(name)))
    seen.update(dict.fromkeys(word.lower() for word in _WORD.findall(outside_names(query))))
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


def present(knowledge_base_ids: list[int], words: list[str]) -> set[str]:
    """The words (letters and digits, as `terms` makes them) that some passage of these bases holds, each
    matched through the database's own stemmer; on PostgreSQL a stop word (no lexeme) counts as held."""
    words = list(dict.fromkeys(word for word in words if _WORD.fullmatch(word)))[:MAX_TERMS]
    if not words or not knowledge_base_ids:
        return set()
    ids = ",".join(str(int(kb)) for kb in knowledge_base_ids)
    params = {f"w{i}": word for i, word in enumerate(words)}
    if db.engine.dialect.name == "postgresql":
        checks = [f"SELECT CAST(:w{i} AS text) WHERE numnode(to_tsquery('english', :w{i})) = 0 OR EXISTS ("
                  f"SELECT 1 FROM knowledge_passages WHERE knowledge_base_id IN ({ids}) "
                  f"AND search_vector @@ to_tsquery('english', :w{i}))" for i in range(len(words))]
    else:
        params |= {f"q{i}": '"' + word + '"' for i, word in enumerate(words)}
        checks = [f"SELECT :w{i} WHERE EXISTS (SELECT 1 FROM knowledge_fts WHERE knowledge_fts MATCH :q{i} "
                  f"AND knowledge_base_id IN ({ids}))" for i in range(len(words))]
    return set(db.session.scalars(text(" UNION ALL ".join(checks)), params))


def count(knowledge_base_id: int) -> int:
    """How many lexical rows a knowledge base has (for tests and the admin page)."""
    if db.engine.dialect.name == "postgresql":
        sql = "SELECT count(*) FROM knowledge_passages WHERE knowledge_base_id = :kb AND search_vector IS NOT NULL"
    else:
        sql = "SELECT count(*) FROM knowledge_fts WHERE knowledge_base_id = :kb"
    return int(db.session.scalar(text(sql), {"kb": knowledge_base_id}) or 0)
