"""The "Test connection" button: one tiny request, the answer or the provider's error."""

from __future__ import annotations

from flask import Flask
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.exceptions import AgentRunError, ModelHTTPError, ModelRequestTimeout, ModelTimeoutError

from app.guards.outbound import OutboundRefused
from app.runtime import loop
from app.runtime.failures import provider_error
from app.runtime.providers import ModelSpec, ModelUnavailable, build_model


async def _ping(spec: ModelSpec) -> str:
    settings = spec.settings("utility")
    settings["max_tokens"] = 16
    agent = PydanticAgent(build_model(spec), model_settings=settings)
    result = await agent.run("Reply with the single word: ok")
    return result.output


def check_connection(app: Flask, spec: ModelSpec) -> tuple[bool, str]:
    """Return (worked, what the model or the provider said)."""
    try:
        return True, loop.run(_ping(spec), timeout=spec.timeout + 5)
    except ModelHTTPError as error:
        return False, provider_error(error)
    except (ModelRequestTimeout, ModelTimeoutError) as error:
        return False, spec.timeout_message(getattr(error, "timeout", None))
    except OutboundRefused as error:
        return False, str(error)
    except (AgentRunError, ModelUnavailable, TimeoutError, OSError) as error:
        return False, f"{type(error).__name__}: {error}"
