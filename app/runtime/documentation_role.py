"""The documentation role: once a turn has searched the knowledge bases, it writes on with that role's settings.

A turn starts with the orchestration role's settings (app/runtime/profiles.py). The knowledge skill notes each
search in the turn's record; the model requests after the first search write an answer from documentation,
with citations (the Workspace assistant explaining Skilldesk from its docs, any agent answering from a
knowledge base), so they get the documentation role's settings on top of the turn's: temperature 0.2 unless
the model configuration's documentation profile says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.settings import ModelSettings

from app.runtime.record import TurnRecord


@dataclass
class DocumentationRole(AbstractCapability[Any]):
    """Give a turn's model requests the documentation role's settings from its first knowledge search on."""

    record: TurnRecord
    settings: ModelSettings
    """The documentation role's settings of the turn's model configuration."""

    def get_model_settings(self) -> Callable[[RunContext[Any]], ModelSettings]:
        def settings(ctx: RunContext[Any]) -> ModelSettings:
            return self.settings if self.record.searches else ModelSettings()
        return settings
