"""What the runtime knows of a model configuration: a detached, frozen copy, safe to carry into the runtime loop.

The profiles by role (app/runtime/profiles.py) read it for a role's settings, the providers
(app/runtime/providers.py) build a pydantic-ai model from it; it depends on neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app, has_app_context

from app.guards.outbound import OutboundPolicy, policy_from_config
from app.models import ModelConfig


@dataclass(frozen=True)
class ModelSpec:
    """A detached copy of a ModelConfig, safe to carry into the runtime loop."""

    id: int | None
    name: str
    provider: str
    model_name: str
    base_url: str | None
    api_key_env: str | None
    context_window: int
    max_tokens: int | None
    temperature: float | None
    timeout: float
    profiles: dict
    retries: int = 0
    outbound: OutboundPolicy = OutboundPolicy()
    """The guard every provider's base URL is reached through (OUTBOUND_* of the app)."""

    @classmethod
    def of(cls, config: ModelConfig | None) -> ModelSpec:
        if config is None:
            return OFFLINE_SPEC
        # Read where the configuration is read (an app context); without one, the strictest guard.
        outbound = policy_from_config(current_app.config) if has_app_context() else OutboundPolicy()
        return cls(config.id, config.name, config.provider, config.model_name, config.base_url,
                   config.api_key_env, config.context_window, config.max_tokens, config.temperature,
                   config.timeout, dict(config.profiles or {}), config.retries or 0, outbound)

    def timeout_message(self, seconds: float | None = None) -> str:
        """Say which limit a request that timed out hit, and where it is set."""
        seconds = seconds or self.timeout
        retries = f", {self.retries} {'retry' if self.retries == 1 else 'retries'} included" if self.retries else ""
        return (f"The provider did not answer within {seconds:g} s{retries} "
                f"(timeout set on model configuration {self.name!r}).")


OFFLINE_SPEC = ModelSpec(None, "Built-in offline model", "offline", "skilldesk-offline", None, None,
                         32_000, None, None, 60.0, {})
