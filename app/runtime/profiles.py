"""Model profiles by role, and the provider quirks, in one module.

Tools and skills ask the resolved profile of a model configuration for a role's settings and output
type (`profile_for(spec).settings("documentation")`, `.output_type("orchestration")`); they never look
at model names. The roles:
- orchestration: the agent's turn (tools, answers, calls that wait for a person); "chat" is its old name;
- documentation: answers written from documentation, with citations: a turn's requests from its first
  knowledge search on (app/runtime/documentation_role.py);
- utility: short, deterministic jobs (connection checks, classifications);
- verifier: the answer review's checks the deterministic measures cannot decide (app/runtime/verifier.py);
  configured by giving the model configuration a profile for this role (else the utility profile's);
- summary and title: the compaction's summaries and conversation titles.
A role's settings are: the configuration's own, then the role defaults, then the configuration's
profile for the role (the admin's per-role overrides), then the settings a quirk sets for the role.

A quirk is a known behaviour of some provider's models, registered here with what it changes: the
pydantic-ai model profile the model is built with, and settings by role. This is the only place that
matches model names; a model no quirk matches keeps the role defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import DeferredToolRequests

from app.runtime.model_spec import ModelSpec

ROLES = ("orchestration", "documentation", "utility", "verifier", "summary", "title")
ALIASES = {"chat": "orchestration"}
STREAMED_ROLES = frozenset({"orchestration", "documentation"})  # the user waits for their first words

# Settings a role gets unless the configuration's profile for that role says otherwise.
ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "orchestration": {},
    "documentation": {"temperature": 0.2},
    "utility": {"temperature": 0},
    "verifier": {"temperature": 0},
    "summary": {"temperature": 0.2},
    "title": {"max_tokens": 60, "temperature": 0.2, "timeout": 20},
}
# What a run of the role returns: a turn may end on calls that wait for a person; the others write text.
ROLE_OUTPUT: dict[str, Any] = {
    "orchestration": [str, DeferredToolRequests],
    "documentation": str,
    "utility": str,
    "verifier": str,
    "summary": str,
    "title": str,
}


def role_of(role: str) -> str:
    """Return the role's current name (an old name maps to its successor); unknown roles are refused."""
    role = ALIASES.get(role, role)
    if role not in ROLE_DEFAULTS:
        raise ValueError(f"Unknown model role {role!r}; use one of {', '.join(ROLES)}.")
    return role


@dataclass(frozen=True)
class Quirk:
    """A provider behaviour: which models have it, and what their profile and role settings need."""

    name: str
    description: str
    providers: frozenset[str]
    model_pattern: str
    # Fields of the pydantic-ai model profile the model is built with (e.g. where reasoning is read from).
    model_profile: dict[str, Any] = field(default_factory=dict)
    # Settings by role, applied last.
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def applies(self, provider: str, model_name: str) -> bool:
        return provider in self.providers and re.search(self.model_pattern, model_name or "", re.I) is not None


OPENAI_CHAT = frozenset({"openai-chat", "openai-compatible"})
QUIRKS: list[Quirk] = [
    Quirk("reasoning_content",
          "Reasoning is returned in the message's native `reasoning_content` field, not in the visible text; it "
          "is read from there as thinking and sent back in that field with tool calls.",
          OPENAI_CHAT, r"deepseek-(?:reasoner|r1)|\bqwq\b|qwen3.*thinking",
          model_profile={"openai_chat_thinking_field": "reasoning_content",
                         "openai_chat_send_back_thinking_parts": "field"}),
    Quirk("fixed_temperature",
          "Reasoning models that accept only their default temperature: the role defaults' temperature is not sent.",
          frozenset({"openai", "openai-chat"}), r"^(?:o\d|gpt-5)",
          settings={role: {"temperature": None} for role in ROLES}),
]


def register_quirk(quirk: Quirk) -> None:
    """Add a quirk (plugins): it applies to models built from then on."""
    QUIRKS.append(quirk)


@dataclass(frozen=True)
class ResolvedProfile:
    """A model configuration's settings and output type by role, with the quirks that apply to it."""

    spec: ModelSpec
    quirks: tuple[Quirk, ...] = ()

    def settings(self, role: str) -> ModelSettings:
        """Return the model settings for a role (see the module's order of precedence)."""
        role = role_of(role)
        merged: dict[str, Any] = {"timeout": self.spec.timeout}
        if self.spec.max_tokens:
            merged["max_tokens"] = self.spec.max_tokens
        if self.spec.temperature is not None:
            merged["temperature"] = self.spec.temperature
        merged.update(ROLE_DEFAULTS[role])
        stored = self.spec.profiles or {}
        for name in (old for old, new in ALIASES.items() if new == role):
            merged.update({k: v for k, v in (stored.get(name) or {}).items() if v is not None})
        merged.update({k: v for k, v in (stored.get(role) or {}).items() if v is not None})
        for quirk in self.quirks:
            merged.update(quirk.settings.get(role) or {})
        allowed = {"max_tokens", "temperature", "timeout", "top_p"}
        settings = ModelSettings(**{k: v for k, v in merged.items() if k in allowed and v is not None})
        # The timeout bounds what the user waits for, the SDK's retries included: until a streamed
        # answer starts, or for the whole request (titles, summaries: not streamed). Each attempt,
        # and each wait between two parts of a streamed answer, has the same bound.
        settings["first_event_timeout" if role in STREAMED_ROLES else "request_timeout"] = settings["timeout"]
        return settings

    def output_type(self, role: str) -> Any:
        """Return what a run of the role returns."""
        return ROLE_OUTPUT[role_of(role)]

    def model_profile(self) -> dict[str, Any]:
        """Return the pydantic-ai model profile fields the quirks set."""
        profile: dict[str, Any] = {}
        for quirk in self.quirks:
            profile.update(quirk.model_profile)
        return profile


def profile_for(spec: ModelSpec, quirks: Callable[[], list[Quirk]] = lambda: QUIRKS) -> ResolvedProfile:
    """Resolve a model configuration's profile: its role settings and the quirks of its provider and model."""
    return ResolvedProfile(spec, tuple(q for q in quirks() if q.applies(spec.provider, spec.model_name)))
