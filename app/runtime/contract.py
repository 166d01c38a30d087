"""What the runtime offers skills, built-in or installed: the one module of the runtime a skill imports.

`Skill`, `SkillContext`, `TurnEnd`, the turn's record and a reviewer's `Verdict` are the contract itself
(app/runtime/skill.py, record.py, verdicts.py); the rest are the
runtime's services a skill may build on. import-linter checks that skills import nothing else of the
runtime (see `[tool.importlinter]` in pyproject.toml).
"""

from __future__ import annotations

from app.runtime import evidence
from app.runtime.builder import AgentSpec, Person, build_agent
from app.runtime.compaction import CompactionResult, Summarizer, compact, threshold_target
from app.runtime.context_size import MAX_RATIO, estimate_tokens, usage_ratio
from app.runtime.deferred import ASKS_USER, CARD_KEY
from app.runtime.events import HEADER, NOTICE
from app.runtime.history import load_history
from app.runtime.loop import run as run_on_loop
from app.runtime.model_choice import model_spec_for
from app.runtime.model_spec import ModelSpec
from app.runtime.offline import OFFLINE_PATTERNS
from app.runtime.outcome import step_result
from app.runtime.profiles import profile_for
from app.runtime.prompts import clock_variables, render, render_prompt, template_error
from app.runtime.providers import ModelUnavailable, build_model
from app.runtime.record import Passage, ToolCall, TurnRecord
from app.runtime.services import Invalid, Refused, register_service
from app.runtime.skill import Built, Skill, SkillContext, ToolGroup, TurnEnd
from app.runtime.tool_metadata import (
    DESTRUCTIVE_KEY,
    EFFECT_KEY,
    GROUP_KEY,
    MUTATES_KEY,
    ROUTING_ONLY_KEY,
    TRUSTED_RESULT_KEY,
    mutation,
)
from app.runtime.verdicts import Verdict

__all__ = [
    # The contract
    "Built", "Skill", "SkillContext", "TurnEnd",
    # Tool groups and the tool metadata keys every skill may set (`mutation(...)` builds a mutation's)
    "ToolGroup", "GROUP_KEY", "MUTATES_KEY", "EFFECT_KEY", "DESTRUCTIVE_KEY", "TRUSTED_RESULT_KEY", "ROUTING_ONLY_KEY",
    "OFFLINE_PATTERNS", "mutation",
    # The answer review: what a turn did (its record) and what a reviewer says of the answer
    "TurnRecord", "ToolCall", "Passage", "Verdict",
    # Models and agents: which model a conversation runs on, building one, a role's settings, building another agent
    "ModelSpec", "ModelUnavailable", "build_model", "model_spec_for", "profile_for",
    "AgentSpec", "Person", "build_agent",
    # The runtime's loop and a conversation's model context
    "run_on_loop", "load_history",
    # Run events a tool may show on the page (SkillContext.tell_page)
    "HEADER", "NOTICE",
    # What a mutation did, bounded and value-free (action memory, answer checks): a module; a tool step's state
    "evidence", "step_result",
    # Services areas offer skills (SkillContext.service), and the two errors they raise
    "register_service", "Invalid", "Refused",
    # Calls that wait for a person
    "ASKS_USER", "CARD_KEY",
    # Sandboxed prompt templates
    "clock_variables", "render", "render_prompt", "template_error",
    # Compaction's mechanics
    "MAX_RATIO", "CompactionResult", "Summarizer", "compact", "estimate_tokens", "threshold_target",
    "usage_ratio",
]
