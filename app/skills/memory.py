"""Long-term memory: the agent stores facts and finds them again by meaning, in later conversations too."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry, ToolReturn
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.knowledge.memories import MAX_CHARS, MemoryUnavailable, clean_text, recall, relevance, remember, text_error
from app.runtime.contract import TRUSTED_RESULT_KEY, Skill, SkillContext, mutation

INSTRUCTIONS = (
    "You have a long-term memory. Use search_memory when earlier conversations may hold the answer "
    "(the user's preferences, names, decisions). Use store_in_memory for lasting facts worth knowing "
    "next time, one short sentence each; never store passwords or other secrets."
)


# Measured with the bundled MiniLM (benchmarks/memory_relevance.py): a question's answering memory scored
# 0.26 to 0.77 (median 0.56); the best memory for an unrelated question 0.08 to 0.30 (median 0.19).
# 0.25 kept all 23 related pairs and dropped 18 of the 20 unrelated questions' best hits.
MIN_RELEVANCE = 0.25


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    personal: bool = Field(True, title="Personal memories")
    """Keep each user's memories apart (on), or share one memory among everyone who uses this agent (off)."""
    results: int = Field(5, ge=1, le=20, title="Results per search")
    """How many memories one search returns at most."""
    max_chars: int = Field(500, ge=20, le=MAX_CHARS, title="Longest memory (characters)")
    """Longest memory the agent may store, in characters."""
    min_relevance: float = Field(MIN_RELEVANCE, ge=0, le=1, title="Minimum relevance")
    """A search returns only memories at least this relevant (1 − cosine distance: 1 the same meaning, 0
    unrelated). Lower finds looser matches, higher only close ones; 0 keeps all but the opposite."""


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    toolset = FunctionToolset(instructions=INSTRUCTIONS)
    scope = {"user_id": ctx.user_id, "agent_id": ctx.agent_id, "personal": config.personal}

    # Writing memory is destructive: a memory steers later conversations (app/runtime/untrusted.py).
    @toolset.tool_plain(metadata={**mutation("remember", "memory", destructive=True), TRUSTED_RESULT_KEY: True})
    def store_in_memory(text: str) -> ToolReturn:
        """Remember one lasting fact (a preference, a name, a decision) for later conversations."""
        text = clean_text(text)
        if error := text_error(text, config.max_chars):
            raise ModelRetry(f"{error} Store the essential fact in one short sentence.")
        with ctx.app_context():
            try:
                memory, created = remember(text, **scope)
            except MemoryUnavailable as unavailable:
                raise ToolFailed(str(unavailable)) from unavailable
            return ToolReturn(f"{'Remembered' if created else 'Already remembered'} (memory {memory.id}).",
                              metadata={"outcome": {"id": memory.id, "changed": created, "reused": not created}})

    @toolset.tool_plain
    def search_memory(query: str) -> list[dict[str, Any]] | str:
        """Search long-term memory by meaning for facts stored in earlier conversations."""
        if not clean_text(query):
            raise ModelRetry("Say what to look for in memory.")
        with ctx.app_context():
            try:
                found = recall(query, limit=config.results, min_relevance=config.min_relevance, **scope)
            except MemoryUnavailable as unavailable:
                raise ToolFailed(str(unavailable)) from unavailable
            if not found:
                return (f"No memory matched (the minimum relevance is {config.min_relevance:g}). "
                        "Answer without memory, or search again in other words.")
            return [
                {"memory": memory.id, "text": memory.text, "saved": memory.created_at.date().isoformat(),
                 "relevance": round(relevance(distance), 2)}
                for memory, distance in found
            ]

    return toolset


skill = Skill(name="memory", title="Long-term memory", config=Config, build=build,
              description=__doc__.strip())
