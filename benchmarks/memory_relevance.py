"""Measure the memory search's relevance floor with the bundled MiniLM embeddings.

Run with the project's venv: `.venv/bin/python benchmarks/memory_relevance.py`. Relevance is what the
memory tool reports: 1 − cosine distance, i.e. the cosine similarity of the query's and the memory's
MiniLM vectors (the metric of the Chroma collections). For a set of memories as people tell them to
an assistant, it embeds questions that one memory answers (related) and questions none answers
(unrelated), and prints:

(a) the relevance of each related question's memory: lowest and median, and the share kept at the
    memory skill's default floor (target ≥ 95 %);
(b) the best relevance any memory reaches for an unrelated question (the noise a search would return
    without a floor): highest and median, and the share the default floor drops (target ≥ 80 %);
(c) for every candidate floor from 0.10 to 0.40, related kept and unrelated dropped (no target).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _figures import Figures  # noqa: E402

from app.knowledge.embeddings import embedder_from_config  # noqa: E402
from app.skills.memory import Config  # noqa: E402

MEMORIES = [
    "My favourite colour is teal.", "I live in Lisbon.", "My daughter is called Ines.",
    "I am allergic to peanuts.", "Our team deploys on Fridays.", "I prefer answers in French.",
    "The office wifi is called Harbour.", "My manager is Priya.", "I drive a blue Toyota.",
    "I run a marathon every spring.", "The staging database is Postgres 16.", "I work from home on Mondays.",
    "My birthday is on 3 March.", "I am vegetarian.", "The quarterly report is due on the 15th.",
    "I use Vim as my editor.", "My cat is named Miso.", "I am learning to play the cello.",
]
RELATED = [  # (question, index of the memory that answers it, or indices when several do)
    ("Which colour does the user like?", 0), ("Where does the user live?", 1), ("home city", 1),
    ("What is my daughter's name?", 2), ("Can I eat peanut butter?", 3), ("food allergies", 3),
    ("When do we release?", 4), ("deployment schedule", 4), ("Which language should you answer in?", 5),
    ("What's the wifi network?", 6), ("Who is my boss?", 7), ("What car do I have?", 8),
    ("What sport do I do?", 9), ("Which database version is on staging?", 10),
    ("Which days am I remote?", 11), ("When is my birthday?", 12), ("Do I eat meat?", 13),
    ("dietary preferences", 13), ("When is the report deadline?", 14), ("Which text editor do I use?", 15),
    ("What is the name of my pet?", 16), ("What instrument am I learning?", 17), ("hobbies", (9, 17)),
]
UNRELATED = [
    "What is the capital of Mongolia?", "How do I bake sourdough bread?", "Explain quantum entanglement.",
    "What's the weather tomorrow?", "Who won the 1998 world cup?", "How many legs does a spider have?",
    "Write a haiku about autumn.", "What is 17 times 23?", "Summarize the news", "hello", "thanks!",
    "How do I reverse a linked list?", "What is the boiling point of water?", "Tell me a joke.",
    "Convert 10 miles to kilometres.", "Who painted the Mona Lisa?", "What does HTTP 418 mean?",
    "Recommend a science fiction novel.", "How far is the Moon?", "What is photosynthesis?",
]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / ((sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5))


def main() -> int:
    embedder = embedder_from_config({"EMBEDDINGS": "minilm"})
    memories = embedder.embed(MEMORIES)
    related = [max(cosine(vector, memories[i]) for i in (answers if isinstance(answers, tuple) else (answers,)))
               for vector, (_q, answers) in zip(embedder.embed([q for q, _ in RELATED]), RELATED, strict=True)]
    noise = [max(cosine(vector, memory) for memory in memories) for vector in embedder.embed(UNRELATED)]
    floor = Config().min_relevance

    figures = Figures()
    kept = sum(r >= floor for r in related) / len(related)
    dropped = sum(n < floor for n in noise) / len(noise)
    figures.report("default floor", floor, "relevance")
    figures.report("related: lowest relevance", min(related), "")
    figures.report("related: median relevance", statistics.median(related), "")
    figures.report("related kept at the default floor", 100 * kept, "%", "≥ 95 %", kept >= 0.95)
    figures.report("unrelated: highest best relevance", max(noise), "")
    figures.report("unrelated: median best relevance", statistics.median(noise), "")
    figures.report("unrelated dropped at the default floor", 100 * dropped, "%", "≥ 80 %", dropped >= 0.8)
    for candidate in [n / 100 for n in range(10, 41, 5)]:
        figures.report(f"floor {candidate:.2f}: related kept", 100 * sum(r >= candidate for r in related)
                       / len(related), "%")
        figures.report(f"floor {candidate:.2f}: unrelated dropped", 100 * sum(n < candidate for n in noise)
                       / len(noise), "%")
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
