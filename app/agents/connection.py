"""The "Test connection" button: one tiny request, then a status and a short message in Skilldesk's words.

What the server sent back is never shown: a base URL can point at an address inside the network, and its
answer is not the admin's to read through Skilldesk. A refused address, a missing key and a timeout say what
to change; a provider's HTTP error says its status and what that status usually means.
"""

from __future__ import annotations

from flask import Flask
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelHTTPError,
    ModelRequestTimeout,
    ModelTimeoutError,
)

from app.guards.outbound import OutboundRefused
from app.runtime import loop
from app.runtime.failures import said_for_people
from app.runtime.model_spec import ModelSpec
from app.runtime.profiles import profile_for
from app.runtime.providers import ModelUnavailable, build_model

STATUS_MEANINGS = {
    400: "the request was refused; check the model name and its settings",
    401: "the API key was refused; check the key in {key}",
    403: "the API key may not use this model; check the key in {key} and the account's access",
    404: "no such model or endpoint; check the model name and the base URL",
    408: "the request timed out on the provider's side; try again",
    413: "the request was too large",
    422: "the request was refused; check the model name and its settings",
    429: "too many requests, or no quota left; try again later, or check the account's quota",
}
SERVER_FAULT = "the provider failed on its side; try again later"
OTHER_STATUS = "not an answer a model provider gives; check the provider and the base URL"
UNREACHABLE = "Skilldesk could not connect to {where}; check the base URL and that the server is running."
NOT_A_MODEL_API = "The server answered, but not as a {provider} model API does; check the provider and the base URL."


async def _ping(spec: ModelSpec) -> None:
    settings = profile_for(spec).settings("utility")
    settings["max_tokens"] = 16
    agent = PydanticAgent(build_model(spec), model_settings=settings)
    await agent.run("Reply with the single word: ok")


def check_connection(app: Flask, spec: ModelSpec) -> tuple[bool, str]:
    """Return (worked, what Skilldesk says of it); nothing the server sent back is in the message."""
    try:
        loop.run(_ping(spec), timeout=spec.timeout + 5)
    except (AgentRunError, ModelUnavailable, OutboundRefused, TimeoutError, OSError) as error:
        return False, failure_message(spec, error)
    return True, f"Connected: {spec.name} ({spec.model_name}) answered."


def failure_message(spec: ModelSpec, error: BaseException) -> str:
    """Say why the connection test failed: Skilldesk's own words, and the provider's status at most."""
    if said := said_for_people(error):
        return said
    if isinstance(error, ModelHTTPError):
        return f"The provider answered {error.status_code}: {status_meaning(spec, error.status_code)}."
    if isinstance(error, ModelRequestTimeout | ModelTimeoutError | TimeoutError):
        return spec.timeout_message(getattr(error, "timeout", None))
    if isinstance(error, ModelAPIError | OSError):
        return UNREACHABLE.format(where=spec.base_url or f"the {spec.provider} API")
    return NOT_A_MODEL_API.format(provider=spec.provider)


def status_meaning(spec: ModelSpec, status: int) -> str:
    """What an HTTP status from a model provider usually means, and what to check."""
    if status >= 500:
        return SERVER_FAULT
    return STATUS_MEANINGS.get(status, OTHER_STATUS).format(key=spec.api_key_env or "the key variable")
