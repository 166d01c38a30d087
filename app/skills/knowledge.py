"""Knowledge bases: the agent searches documents and answers with citations checked against what it retrieved."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.knowledge.citation_review import Outcome, UncitedPolicy, assess_citations, review_citations
from app.knowledge.citations import Source, TurnSources, shown_text, strip_invalid
from app.knowledge.embeddings import MINILM, embedder_from_config
from app.knowledge.evidence import MIN_SIMILARITY, MIN_SIMILARITY_UNKNOWN_WORDS, Floor
from app.knowledge.library import usable_bases
from app.knowledge.search import query_problem, retrieve
from app.knowledge.support import support_check_for
from app.runtime.contract import OFFLINE_PATTERNS, Skill, SkillContext, TurnRecord, Verdict

# The offline model takes a plain question ("what is compaction?") to the search, the question as the query.
OFFLINE_QUESTION = {OFFLINE_PATTERNS: (
    r"^\s*(?P<query>(?:what|how|why|where|when|which|who|is|are|does|do|can|explain|tell me about)\b[^\n]*?)\s*$",
)}

INSTRUCTIONS = (
    "You can search knowledge bases with search_knowledge. For a question the documents may answer, search "
    "first. Write `query` as a standalone search: for a follow-up, include what the conversation is about "
    "(replace 'it', 'that' by the names they stand for). Results are numbered [1], [2]: cite every "
    "statement you take from them with its number, and cite only numbers you were given in this turn. Say "
    "plainly what the passages do not say; a missing passage proves neither that a feature exists nor that "
    "it does not."
)
# What the search tool says when the evidence floor finds nothing: no passage is given, so nothing can be cited.
NOTHING_ANSWERS = (
    "No passage answers this: nothing in {bases} is close enough to the query ({reason}). There is nothing to "
    "cite. Unless the question can be searched in other words, say that the documents do not answer it."
)
# Names an answer may use that no passage needs to have.
KNOWN_NAMES = frozenset({"skilldesk"})


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    knowledge_bases: list[str] = Field(default_factory=list, title="Knowledge bases")
    """Names of the knowledge bases to search; empty searches every one the user's role may use."""
    results: int = Field(6, ge=1, le=20, title="Passages per search")
    """How many passages one search returns at most."""
    per_document: int = Field(3, ge=1, le=10, title="Passages per document")
    """At most this many passages of one document in a search's results."""
    min_similarity: float = Field(MIN_SIMILARITY, ge=0, le=1, title="Evidence floor: similarity")
    """A search whose best passage is less similar in meaning to the query than this (cosine, 0-1) finds
    nothing, and the agent says the documents do not answer it; a passage naming an identifier of the query
    counts as evidence whatever its similarity. Calibrated for the bundled MiniLM (docs/knowledge.md)."""
    min_similarity_unknown_words: float = Field(MIN_SIMILARITY_UNKNOWN_WORDS, ge=0, le=1,
                                                title="Evidence floor: similarity when a word is in no passage")
    """The floor when a word of the query is in no passage at all ("teleportation", "Salesforce"): such a
    search needs a closer match by meaning."""
    uncited: Literal["mark", "every_sentence_cites"] = Field("mark", title="Uncited statements")
    """A statement of the answer that no passage retrieved in this turn supports (it cites none, or its
    citation was removed because the passage does not say it): "mark" shows it with an "(unverified)"
    marker; "every_sentence_cites" (strict bases) asks the model once to cite or leave it out, then drops it."""


@dataclass
class Knowledge(AbstractCapability[Any]):
    """The search tool; what it retrieves goes into the turn's record, which the skill's review reads."""

    config: Config
    skill_ctx: SkillContext
    record: TurnRecord = field(init=False)
    unanswered: list[str] = field(default_factory=list)  # searches the evidence floor found nothing for

    def __post_init__(self) -> None:
        # Outside a run (a settings check) the skill keeps a record of its own.
        self.record = self.skill_ctx.record if self.skill_ctx.record is not None else TurnRecord()

    def get_toolset(self) -> FunctionToolset:
        toolset = FunctionToolset(instructions=INSTRUCTIONS)

        @toolset.tool_plain(metadata=OFFLINE_QUESTION)
        def search_knowledge(query: str) -> str:
            """Search the knowledge bases; `query` is a standalone search that carries the conversation's context."""
            query = " ".join((query or "").split())
            if problem := query_problem(query):
                raise ModelRetry(problem)
            return self.search(query)

        return toolset

    def search(self, query: str) -> str:
        with self.skill_ctx.app_context():
            kbs = usable_bases(self.config.knowledge_bases, self.skill_ctx.role)
            if not kbs:
                raise ToolFailed("No knowledge base is available to this agent for your role.")
            record = self.record
            record.searches.append(query)
            record.bases = [kb.name for kb in kbs]
            floor = Floor(self.config.min_similarity, self.config.min_similarity_unknown_words)
            result = retrieve(kbs, query, limit=self.config.results, per_document=self.config.per_document,
                              floor=floor)
            if not result.kept or not result.evidence.answerable:
                self.unanswered.append(query)
                return NOTHING_ANSWERS.format(bases=", ".join(record.bases),
                                              reason=result.evidence.reason if result.kept else "no passage matched")
            found = result.kept
            blocks = []
            for scored in found:
                passage = scored.passage
                number = record.passage_number(passage.id, passage.document_id, passage.document.title,
                                               passage.heading,
                                               shown_text(passage.document.title, passage.heading, passage.text))
                where = passage.document.title + (f" — {passage.heading}" if passage.heading else "")
                blocks.append(f"[{number}] (passage {passage.id}) {where}\n{passage.text}")
            return "\n\n".join(blocks)


def turn_sources(record: TurnRecord) -> TurnSources:
    """The record's passages and searches as the citation functions read them."""
    sources = TurnSources(searches=list(record.searches), bases=list(record.bases))
    for number, passage in record.passages.items():
        sources.sources[number] = Source(number, passage.passage_id, passage.document_id, passage.title,
                                         passage.heading, passage.text)
    return sources


def passage_url(passage_id: int) -> str:
    return f"/knowledge/passages/{passage_id}"


def build(config: Config, ctx: SkillContext) -> Knowledge:
    return Knowledge(config, ctx)


def review(config: Config, built: list[Any], text: str, record: TurnRecord) -> Verdict:
    """Check the answer's citations against the passages this turn retrieved (the `review_answer` hook).

    Each cited sentence must be supported by the passages it cites (app/knowledge/citation_review.py): an
    unsupported citation is removed, an uncited statement marked (or, on strict bases, asked about once and
    dropped), valid citations linked; when nothing is supported the model reconsiders once, then the answer
    is the honest "the documents do not answer this". What the measure cannot decide goes to the verifier
    model when one is configured. A turn that searched nothing only loses its invalid citations.
    """
    turn = turn_sources(record)
    if not record.searches:
        return Verdict.revised(lambda answer: strip_invalid(answer, turn), phase=CITATIONS)
    reconsidered = record.asked.count(skill.name)
    knowledge = next(item for item in built if isinstance(item, Knowledge))
    assessment = assess_citations(text, turn, support_check(knowledge.skill_ctx.app.config), KNOWN_NAMES)
    decisions = _verified(assessment, turn, record)
    link = lambda number: passage_url(turn.sources[number].passage_id)  # noqa: E731

    def decided(may_ask_again: bool):
        return review_citations(assessment, policy=UncitedPolicy(config.uncited), may_ask_again=may_ask_again,
                                decisions=decisions, link=link)

    checked = decided(reconsidered == 0)
    unanswered = list(knowledge.unanswered)
    meta = {"knowledge": {"searches": list(record.searches), "reconsidered": reconsidered,
                          **({"no_evidence": unanswered} if unanswered else {}), **checked.meta(turn)}}
    if checked.outcome is Outcome.ASK_AGAIN:
        return Verdict.ask_again(checked.feedback, otherwise=_verdict(decided(False), text, meta), meta=meta)
    return _verdict(checked, text, meta)


def _verdict(checked: Any, text: str, meta: dict[str, Any]) -> Verdict:
    if checked.outcome is Outcome.NO_EVIDENCE:
        return Verdict.replaced(checked.text, meta=meta)
    # The review's text is of this answer. Were another reviewer to revise it first (none of the built-in ones
    # does), no citation of the revised text would be checked: they all go, rather than show unchecked.
    return Verdict.revised(lambda answer: checked.text if answer == text else strip_invalid(answer, TurnSources()),
                           phase=CITATIONS, meta=meta)


def _verified(assessment: Any, turn: TurnSources, record: TurnRecord) -> dict[int, bool] | None:
    """Ask the verifier about the sentences the support measure cannot decide, when one is configured."""
    if not assessment.undecided or record.verifier is None:
        return None
    pairs = [(c.text, "\n\n".join(turn.sources[n].text for n in c.numbers if n in turn.sources))
             for c in assessment.undecided]
    answers = record.verifier.supports(pairs)
    return None if answers is None else {c.index: a for c, a in zip(assessment.undecided, answers, strict=True)}


def support_check(config: Mapping[str, Any]):
    """The support measure, with the thresholds calibrated for the bundled MiniLM (docs/knowledge.md).

    MiniLM whatever embeds the bases: the thresholds are its own. In a web worker of `flask serve` it runs in
    the knowledge process (the app's configuration says so), never in the worker.
    """
    return support_check_for(embedder_from_config({**config, "EMBEDDINGS": MINILM}))


# Citations are linked after the other reviewers' revisions (which may remove text that cites).
CITATIONS = 90

skill = Skill(name="knowledge", title="Knowledge bases", config=Config, build=build, description=__doc__.strip(),
              review_answer=review)
