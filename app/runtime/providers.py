"""Turn a model configuration into a pydantic-ai model and its settings, for one role.

Tools and skills ask for a role (orchestration, documentation, utility, summary, title) through the
resolved profile (app/runtime/profiles.py, with the provider quirks); they never inspect model names.
API keys are read from the environment variable the configuration names; none is stored.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import httpx
import httpx2
from pydantic_ai.models import Model

from app.guards.outbound import PinnedAsyncTransport, guarded_legacy_async_client
from app.runtime.model_spec import ModelSpec
from app.runtime.offline import make_offline_model
from app.runtime.profiles import profile_for

log = logging.getLogger(__name__)


class ModelUnavailable(Exception):
    """The configuration cannot make a model (a missing key, an unknown provider)."""


# Extra providers by name (plugins, and the scripted models of the test suite).
_factories: dict[str, Callable[[ModelSpec], Model]] = {}


def register_provider(name: str, factory: Callable[[ModelSpec], Model] | None) -> None:
    """Add (or, with None, remove) a provider that builds models for configurations naming it."""
    if factory is None:
        _factories.pop(name, None)
    else:
        _factories[name] = factory


# Provider models by what their client depends on, kept for the process: building an SDK client
# (its HTTP client and TLS context) costs more than the rest of a turn. The retries are the client's
# own (a per-request `max_retries` setting would make the SDK copy its client on every request);
# the other settings (timeouts, max tokens) travel with each request.
_models: OrderedDict[tuple, Model] = OrderedDict()
_models_lock = threading.Lock()
MODELS_KEPT = 64
RETIRED_CLOSE_SECONDS = 3_600.0  # longer than any turn, streamed or not (OPENAI_TURN_SECONDS is 600)
_closing: set[asyncio.Task] = set()  # the closes under way, held so the loop does not drop them


def build_model(spec: ModelSpec) -> Model:
    """Return the pydantic-ai model for a configuration, built once per process and client settings.

    Call this on the runtime loop: the model's HTTP client is used on that loop only.
    """
    if spec.provider in _factories:
        return _factories[spec.provider](spec)
    if spec.provider == "offline":
        return make_offline_model(spec.context_window)
    key = _api_key(spec)
    cache_key = (os.getpid(), spec.provider, spec.model_name, spec.base_url, key, spec.context_window, spec.retries,
                 spec.outbound)
    with _models_lock:
        model = _models.get(cache_key)
        if model is not None:
            _models.move_to_end(cache_key)
            return model
    model = _provider_model(spec, key)
    with _models_lock:
        model = _models.setdefault(cache_key, model)
        retired = [_models.popitem(last=False)[1] for _ in range(len(_models) - MODELS_KEPT)]
    for old in retired:
        _close_later(old)
    return model


def _close_later(model: Model) -> None:
    """Close a model dropped from the cache once no turn can still be streaming through its connections.

    Its client is closed on the runtime loop after the longest a turn may take, so its pooled sockets are
    shut, not left to the garbage collector; a run that began with it meanwhile keeps working.
    """
    close = getattr(getattr(model, "client", None), "close", None)
    if close is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # built off the runtime loop (a script): its sockets go with the process
        return
    loop.call_later(RETIRED_CLOSE_SECONDS, _start_closing, close)


def _start_closing(close: Callable[[], Awaitable[None]]) -> None:
    task = asyncio.get_running_loop().create_task(_close(close))
    _closing.add(task)
    task.add_done_callback(_closing.discard)


async def _close(close: Callable[[], Awaitable[None]]) -> None:
    try:
        await close()
    except Exception:  # a client that cannot close cleanly is dropped anyway
        log.debug("a retired model client did not close cleanly", exc_info=True)


# A provider's connections are shared by every run of the process, and a streamed answer holds one for its
# whole length: the pool must hold as many as a process runs at once (MAX_RUNS, 240 by default), as the
# SDKs' own clients do (pydantic-ai's defaults: 1,000, 100 kept alive), not httpx's 100.
PROVIDER_POOL = httpx2.Limits(max_connections=1_000, max_keepalive_connections=100)


def _provider_model(spec: ModelSpec, key: str | None) -> Model:
    # Every provider's SDK gets a guarded HTTP client: its base URL (the provider's own, or one the admin
    # typed) is reached like any tool's URL, pinned, and refused on a private or metadata address unless
    # OUTBOUND_ALLOWED_HOSTS names it, before a request, and so the API key, is sent. The SDK clients are
    # built here also to give them the configuration's retries.
    from pydantic_ai.models import create_async_httpx2_client

    profile = {"context_window": spec.context_window, **profile_for(spec).model_profile()}
    base_url, retries = spec.base_url or None, spec.retries
    if spec.provider in ("openai", "openai-chat", "openai-compatible"):
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = AsyncOpenAI(base_url=base_url, api_key=key or "not-needed", max_retries=retries,
                             http_client=create_async_httpx2_client(transport=_guarded_transport(spec)))
        cls = OpenAIResponsesModel if spec.provider == "openai" else OpenAIChatModel
        return cls(spec.model_name, provider=OpenAIProvider(openai_client=client), profile=profile)
    if spec.provider == "anthropic":
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        client = AsyncAnthropic(api_key=key, base_url=base_url, max_retries=retries,
                                http_client=create_async_httpx2_client(transport=_guarded_transport(spec)))
        return AnthropicModel(spec.model_name, provider=AnthropicProvider(anthropic_client=client), profile=profile)
    if spec.provider == "groq":
        from groq import AsyncGroq
        from pydantic_ai.models.groq import GroqModel
        from pydantic_ai.providers.groq import GroqProvider

        client = AsyncGroq(api_key=key, base_url=base_url or "https://api.groq.com", max_retries=retries,
                           http_client=_guarded_legacy_client(spec))
        return GroqModel(spec.model_name, provider=GroqProvider(groq_client=client), profile=profile)
    raise ModelUnavailable(f"Unknown provider {spec.provider!r}.")


def _guarded_transport(spec: ModelSpec) -> PinnedAsyncTransport:
    return PinnedAsyncTransport(spec.outbound, limits=PROVIDER_POOL)


def _guarded_legacy_client(spec: ModelSpec) -> httpx.AsyncClient:
    """The guarded client in the legacy httpx an SDK still requires, with pydantic-ai's timeouts and user agent."""
    from pydantic_ai.models import ConnectPoolTimeoutCap, get_user_agent

    timeout = httpx.Timeout(timeout=600, connect=5)  # pydantic-ai's own client's
    return guarded_legacy_async_client(
        spec.outbound, limits=PROVIDER_POOL, timeout=timeout, headers={"User-Agent": get_user_agent()},
        event_hooks={"request": [ConnectPoolTimeoutCap(connect=timeout.connect, pool=timeout.pool)]})


def _api_key(spec: ModelSpec) -> str | None:
    if spec.provider == "openai-compatible" and not spec.api_key_env:
        return None  # local servers usually need no key
    if not spec.api_key_env:
        raise ModelUnavailable(f"The model configuration {spec.name!r} names no API key variable.")
    key = os.environ.get(spec.api_key_env)
    if not key:
        raise ModelUnavailable(
            f"The environment variable {spec.api_key_env} is not set; the model configuration "
            f"{spec.name!r} reads its API key from it."
        )
    return key
