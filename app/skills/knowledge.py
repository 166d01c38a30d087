"""Knowledge bases: the agent searches documents and answers with citations checked against what it retrieved."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.knowledge.citation_review import (
    CitationReview,
    Outcome,
    UncitedPolicy,
    assess_citations,
    review_citations,
)
from app.knowledge.citations import TurnSources, shown_text, strip_invalid
from app.knowledge.embeddings import MINILM, embedder_from_config
from app.knowledge.support import support_check_for
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
    min_score: float = Field(0.0, ge=0, le=1, title="Minimum fused score")
    """Passages whose fused score (1.0 = first by meaning and by words) is lower are left out; applied after
    fusion, never to the semantic or lexical score alone."""
    uncited: Literal["mark", "every_sentence_cites"] = Field("mark", title="Uncited statements")
    """A statement of the answer that no passage retrieved in this turn supports (it cites none, or its
    citation was removed because the passage does not say it): "mark" shows it with an "(unverified)"
    marker; "every_sentence_cites" (strict bases) asks the model once to cite or leave it out, then drops it."""


@dataclass
class Knowledge(AbstractCapability[Any]):
    """The search tool, and the check of the answer's citations."""

    config: Config
    skill_ctx: SkillContext
    turn: TurnSources = field(default_factory=TurnSources)
    reconsidered: int = 0
    final: str | None = None

    def get_toolset(self) -> FunctionToolset:
        toolset = FunctionToolset(instructions=INSTRUCTIONS)

        @toolset.tool_plain(metadata=OFFLINE_QUESTION)
        def search_knowledge(query: str) -> str:
            """Search the knowledge bases; `query` is a standalone search that carries the conversation's context."""
            query = " ".join((query or "").split())
            if not query:
                raise ModelRetry("Say what to search for.")
            return self.search(query)

        return toolset

    def search(self, query: str) -> str:
        from app.knowledge.library import usable_bases
        from app.knowledge.search import retrieve

        with self.skill_ctx.app_context():
            kbs = usable_bases(self.config.knowledge_bases, self.skill_ctx.role)
            if not kbs:
                raise ToolFailed("No knowledge base is available to this agent for your role.")
            self.turn.searches.append(query)
            self.turn.bases = [kb.name for kb in kbs]
            found = retrieve(kbs, query, limit=self.config.results, per_document=self.config.per_document,
                             min_score=self.config.min_score).kept
            if not found:
                return "No passage matched. Search again in other words, or say the documents do not answer this."
            blocks = []
            for scored in found:
                passage = scored.passage
                number = self.turn.number_for(passage.id, passage.document_id, passage.document.title,
                                              passage.heading,
                                              shown_text(passage.document.title, passage.heading, passage.text))
                where = passage.document.title + (f" — {passage.heading}" if passage.heading else "")
                blocks.append(f"[{number}] (passage {passage.id}) {where}\n{passage.text}")
            return "\n\n".join(blocks)

    async def after_output_process(self, ctx, *, output_context, output: Any) -> Any:
        if getattr(ctx, "partial_output", False) or not isinstance(output, str):
            return output
        if self.turn.searches:
            # The support check embeds (MiniLM): off the runtime's event loop.
            checked = await asyncio.to_thread(self.review, output, self.reconsidered == 0)
            if checked.outcome is Outcome.ASK_AGAIN:
                self.reconsidered += 1
                raise ModelRetry(checked.feedback)
        self.final = output
        return output

    def review(self, text: str, may_ask_again: bool) -> CitationReview:
        """Check each cited sentence against the passages it cites (app/knowledge/citation_review.py)."""
        check = support_check_for(embedder_from_config({"EMBEDDINGS": MINILM}))  # its thresholds are MiniLM's
        return review_citations(assess_citations(text, self.turn, check, KNOWN_NAMES),
                                policy=UncitedPolicy(self.config.uncited), may_ask_again=may_ask_again,
                                link=lambda number: passage_url(self.turn.sources[number].passage_id))

    def review_output(self, text: str) -> tuple[str, dict[str, Any]]:
        """Cited sentences checked, unsupported citations removed, valid ones linked; or the no-evidence answer."""
        answer = self.final if self.final is not None else text
        if not self.turn.searches:
            return strip_invalid(answer, self.turn), {}
        checked = self.review(answer, may_ask_again=False)
        meta = {"searches": list(self.turn.searches), "reconsidered": self.reconsidered, **checked.meta(self.turn)}
        return checked.text, {"knowledge": meta}


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
