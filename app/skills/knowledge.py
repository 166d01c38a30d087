"""Knowledge bases: the agent searches documents and answers with citations checked against what it retrieved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.knowledge.citations import (
    TurnSources,
    linked,
    no_evidence_answer,
    strip_invalid,
    valid_citations,
)
from app.knowledge.evidence import MIN_SIMILARITY, MIN_SIMILARITY_UNKNOWN_WORDS, Floor
from app.knowledge.library import usable_bases
from app.knowledge.search import query_problem, retrieve
from app.runtime.contract import OFFLINE_PATTERNS, Skill, SkillContext

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
RECONSIDER = (
    "Your answer cites none of the passages retrieved in this turn, so it cannot be shown. Reconsider the "
    "same passages ({numbers}) once more: answer with whatever partial information they do support, citing "
    "it as [n]; if they support nothing, say that the documents do not answer this."
)


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


@dataclass
class Knowledge(AbstractCapability[Any]):
    """The search tool, and the check of the answer's citations."""

    config: Config
    skill_ctx: SkillContext
    turn: TurnSources = field(default_factory=TurnSources)
    unanswered: list[str] = field(default_factory=list)  # searches the evidence floor found nothing for
    reconsidered: int = 0
    final: str | None = None

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
            self.turn.searches.append(query)
            self.turn.bases = [kb.name for kb in kbs]
            floor = Floor(self.config.min_similarity, self.config.min_similarity_unknown_words)
            result = retrieve(kbs, query, limit=self.config.results, per_document=self.config.per_document,
                              floor=floor)
            if not result.kept or not result.evidence.answerable:
                self.unanswered.append(query)
                return NOTHING_ANSWERS.format(bases=", ".join(self.turn.bases),
                                              reason=result.evidence.reason if result.kept else "no passage matched")
            found = result.kept
            blocks = []
            for scored in found:
                passage = scored.passage
                number = self.turn.number_for(passage.id, passage.document_id, passage.document.title,
                                              passage.heading)
                where = passage.document.title + (f" — {passage.heading}" if passage.heading else "")
                blocks.append(f"[{number}] (passage {passage.id}) {where}\n{passage.text}")
            return "\n\n".join(blocks)

    async def after_output_process(self, ctx, *, output_context, output: Any) -> Any:
        if getattr(ctx, "partial_output", False) or not isinstance(output, str):
            return output
        if self.turn.searches and self.turn.sources and not valid_citations(output, self.turn):
            if self.reconsidered == 0:
                self.reconsidered += 1
                numbers = ", ".join(f"[{n}]" for n in self.turn.sources)
                raise ModelRetry(RECONSIDER.format(numbers=numbers))
        self.final = output
        return output

    def review_output(self, text: str) -> tuple[str, dict[str, Any]]:
        """Remove citations not retrieved in this turn; with none left after searching, say so honestly."""
        answer = strip_invalid(self.final if self.final is not None else text, self.turn)
        meta: dict[str, Any] = {}
        if self.turn.searches:
            meta["knowledge"] = {"searches": list(self.turn.searches), "reconsidered": self.reconsidered}
            if self.unanswered:
                meta["knowledge"]["no_evidence"] = list(self.unanswered)
            if not valid_citations(answer, self.turn):
                return no_evidence_answer(self.turn), meta
        used = valid_citations(answer, self.turn)
        if used:
            meta.setdefault("knowledge", {})["citations"] = [
                {"number": n, "passage_id": self.turn.sources[n].passage_id,
                 "title": self.turn.sources[n].title} for n in used]
        return linked(answer, self.turn, passage_url), meta


def passage_url(passage_id: int) -> str:
    return f"/knowledge/passages/{passage_id}"


def build(config: Config, ctx: SkillContext) -> Knowledge:
    return Knowledge(config, ctx)


def check_answer(config: Config, built: list[Any], text: str) -> tuple[str, dict[str, Any]]:
    """The `review_answer` hook: check the run's answer against the passages its searches retrieved."""
    for item in built:
        if isinstance(item, Knowledge):
            return item.review_output(text)
    return text, {}


skill = Skill(name="knowledge", title="Knowledge bases", config=Config, build=build, description=__doc__.strip(),
              review_answer=check_answer)
