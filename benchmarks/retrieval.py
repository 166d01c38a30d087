"""Retrieval quality and speed over Skilldesk's own docs/, on the embedded defaults (SQLite FTS5, MiniLM, Chroma).

Run: `.venv/bin/python benchmarks/retrieval.py [--passages 10000]`. It indexes docs/ as the built-in knowledge
base does, then for the questions of benchmarks/retrieval_questions.py (each with the phrase of the passage
that answers it) prints recall@5 and MRR@10 for lexical, semantic and hybrid retrieval (the product's
settings: 3 passages per document, no floor). Hybrid must beat both on each metric. Then it grows the
index to `--passages` passages (copies of the docs under other titles) and prints the query p95 (embedding
included, as the knowledge skill runs a search: retrieve, then read each passage's document title, heading
and text; target ≤ 50 ms) beside a same-run reference (the query's embedding alone, timed between the
searches, and the load average: the machine may be shared), and the indexing throughput beside MiniLM's
own throughput on the same passages.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _figures import Figures  # noqa: E402
from retrieval_questions import QUESTIONS  # noqa: E402

MODES = ("lexical", "semantic", "hybrid")


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def evaluate(kbs, retrieve) -> dict[str, tuple[float, float]]:
    results = {}
    for mode in MODES:
        recall, reciprocal = [], []
        for question, phrase, _kind in QUESTIONS:
            kept = retrieve(kbs, question, limit=10, mode=mode).kept
            ranks = [i for i, s in enumerate(kept, start=1) if norm(phrase) in norm(s.passage.text)]
            first = ranks[0] if ranks else None
            recall.append(1.0 if first is not None and first <= 5 else 0.0)
            reciprocal.append(1.0 / first if first is not None else 0.0)
        results[mode] = (statistics.mean(recall), statistics.mean(reciprocal))
    return results


# Questions the docs do not answer: what a score floor would have to leave with nothing.
OFF_TOPIC = ("How long should I knead sourdough bread?", "Which football club won the 1998 World Cup final?",
             "What is the boiling point of ethanol?", "How do I replace the chain on a bicycle?",
             "Who painted the Mona Lisa?", "What is the capital of Australia?")


def floor_evidence(figures: Figures, kbs, retrieve) -> None:
    """Could a minimum fused score tell answered questions from unanswered ones? Print what decides it."""
    answering = []
    for question, phrase, _kind in QUESTIONS:
        kept = retrieve(kbs, question, limit=5).kept
        answering += [s.fused for s in kept if norm(phrase) in norm(s.passage.text)][:1]
    off_topic = [retrieve(kbs, question, limit=1).kept[0].fused for question in OFF_TOPIC]
    figures.report("lowest fused score of an answering passage in the top 5", min(answering), "")
    figures.report("answering passages in the top 5 with a fused score under 0.5",
                   sum(score < 0.5 for score in answering) / len(answering) * 100, "%")
    figures.report("highest top fused score for an off-topic question", max(off_topic), "")
    figures.report("lowest top fused score for an off-topic question", min(off_topic), "")


def query_times(kbs, retrieve, embedder, rounds: int = 3) -> tuple[list[float], list[float]]:
    """Time each question as a user's search runs it (retrieve, then read what the skill shows of each passage),
    interleaved with the query's embedding alone: the same-run reference for how loaded the machine is."""
    retrieve(kbs, "warm up")
    durations, embedding = [], []
    for question, _phrase, _kind in QUESTIONS * rounds:
        start = time.perf_counter()
        embedder.embed([question])
        embedding.append(time.perf_counter() - start)
        start = time.perf_counter()
        for scored in retrieve(kbs, question, limit=6).kept:
            _shown = (scored.passage.document.title, scored.passage.heading, scored.passage.text)
        durations.append(time.perf_counter() - start)
    return durations, embedding


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=10_000)
    args = parser.parse_args()
    import flask_migrate

    from app import create_app
    from app.extensions import db
    from app.knowledge.embeddings import embedder_from_config
    from app.knowledge.indexing import index_knowledge_base
    from app.knowledge.library import put_document, sync_folder
    from app.knowledge.search import retrieve
    from app.models import KnowledgeBase, KnowledgeDocument, KnowledgePassage
    from app.seed import ensure_defaults

    figures = Figures()
    root = Path(tempfile.mkdtemp(prefix="skilldesk-retrieval-"))
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{root / 'db.sqlite3'}", "JOBS_IMMEDIATE": True,
                      "CHROMA_PATH": str(root / "chroma"), "JOBS_SQLITE_PATH": str(root / "jobs.sqlite3"),
                      "SECRET_KEY": "bench"})
    with app.app_context():
        flask_migrate.upgrade()
        ensure_defaults()
        db.session.commit()
        docs = db.session.scalar(db.select(KnowledgeBase).where(KnowledgeBase.name == "Skilldesk documentation"))
        embedder_from_config(app.config).embed(["warm up"])
        sync_folder(docs)
        start = time.perf_counter()
        index_knowledge_base(docs.id)
        elapsed = time.perf_counter() - start
        count = db.session.scalar(db.select(db.func.count()).select_from(KnowledgePassage))
        print(f"docs/: {count} passages, {len(QUESTIONS)} questions", file=sys.stderr)
        scores = evaluate([docs], retrieve)
        for mode in MODES:
            figures.report(f"{mode} recall@5", scores[mode][0] * 100, "%")
            figures.report(f"{mode} MRR@10", scores[mode][1], "")
        floor_evidence(figures, [docs], retrieve)
        for metric, index in (("recall@5", 0), ("MRR@10", 1)):
            best_single = max(scores["lexical"][index], scores["semantic"][index])
            figures.report(f"hybrid {metric} minus best single retriever", scores["hybrid"][index] - best_single,
                           "", "> 0", ok=scores["hybrid"][index] > best_single)

        # Grow to the target size with copies of the docs under other titles, timing the indexing.
        scale = KnowledgeBase(name="Scale", roles=["admin"])
        db.session.add(scale)
        db.session.commit()
        sources = list(db.session.scalars(db.select(KnowledgeDocument).where(
            KnowledgeDocument.knowledge_base_id == docs.id)))
        copy = 0
        while count < args.passages:
            copy += 1
            for document in sources:
                put_document(scale, f"upload:copy{copy}-{document.source}", f"copy{copy}-{document.id}.md",
                             f"# {document.title} (copy {copy})\n\n{document.content}".encode())
            db.session.commit()
            start = time.perf_counter()
            index_knowledge_base(scale.id)
            elapsed += time.perf_counter() - start
            count = db.session.scalar(db.select(db.func.count()).select_from(KnowledgePassage))
        figures.report("passages indexed", count, "passages")
        figures.report("indexing throughput", count / elapsed, "passages/s")
        # The floor under that figure in the same run: MiniLM alone on a sample of the same passages.
        sample = list(db.session.scalars(db.select(KnowledgePassage.embedded).order_by(KnowledgePassage.id)
                                         .limit(256)))
        embedder = embedder_from_config(app.config)
        start = time.perf_counter()
        for at in range(0, len(sample), 32):
            embedder.embed(sample[at:at + 32])
        figures.report("MiniLM embedding alone, same passages", len(sample) / (time.perf_counter() - start),
                       "passages/s")
        kbs = [docs, scale]
        durations, embedding = query_times(kbs, retrieve, embedder)
        load = os.getloadavg()[0]
        p95 = statistics.quantiles(durations, n=20)[-1] * 1000
        figures.report("query embedding alone p50 (same-run reference)", statistics.median(embedding) * 1000, "ms")
        figures.report("query embedding alone p95 (same-run reference)",
                       statistics.quantiles(embedding, n=20)[-1] * 1000, "ms")
        figures.report(f"hybrid query p50 at {count} passages", statistics.median(durations) * 1000, "ms")
        figures.report(f"hybrid query p95 at {count} passages", p95, "ms", "≤ 50 ms", ok=p95 <= 50)
        figures.report("load average (1 min) while querying", load, "")
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
