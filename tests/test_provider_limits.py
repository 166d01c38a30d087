"""A model configuration's timeout bounds the whole wait, retries included, and the error says which limit hit."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.models import override_allow_model_requests

from app.extensions import db
from app.models import ModelConfig
from tests.chat_driver import outcome, send, start_chat
from tests.fake_openai import fake_openai

HX = {"HX-Request": "true"}
# Each provider's SDK, pointed at the fake by the configuration's base URL (a hang needs no protocol).
PROVIDERS = {"openai-compatible": "/v1", "anthropic": "", "groq": ""}


def _config(app, server, provider: str = "openai-compatible", **fields) -> int:
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the admin allows the local server
    with app.app_context():
        base_url = server.base_url.removesuffix("/v1") + PROVIDERS[provider]
        fields.setdefault("name", f"Local {provider}")
        config = ModelConfig(provider=provider, model_name="fake-model",
                             base_url=base_url, api_key_env=None if provider == "openai-compatible"
                             else "SKILLDESK_TEST_FAKE_KEY", context_window=8192, profiles={}, **fields)
        db.session.add(config)
        db.session.commit()
        return config.id


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("retries", [0, 2])
def test_a_hanging_provider_fails_the_turn_within_the_timeout_with_one_request(
        app, client, auth, monkeypatch, provider, retries):
    monkeypatch.setenv("SKILLDESK_TEST_FAKE_KEY", "sk-fake")
    auth.login_as("user")
    with fake_openai("hang") as server:
        config_id = _config(app, server, provider, timeout=1, retries=retries)
        conversation_id = start_chat(app, client, model_config_id=config_id)
        with override_allow_model_requests(True):
            run, _message = outcome(app, send(app, client, conversation_id, "Hello?"))
        # The deadline covers the retries: none starts after it. (On a loaded machine the first
        # request may still be on its way when the deadline passes, hence "at most".)
        assert server.requests <= 1
    assert run.status == "failed"
    included = ", 2 retries included" if retries else ""
    assert run.error == (f"The provider did not answer within 1 s{included} "
                         f"(timeout set on model configuration 'Local {provider}').")


def test_retries_are_a_setting_of_the_model_configuration(app, client, auth):
    auth.login_as("user")
    with fake_openai("fail") as server:
        for retries, sent in ((0, 1), (1, 2)):
            before = server.requests
            config_id = _config(app, server, timeout=30, retries=retries, name=f"Failing {retries}")
            conversation_id = start_chat(app, client, model_config_id=config_id)
            with override_allow_model_requests(True):
                run, _message = outcome(app, send(app, client, conversation_id, "Hello?"))
            assert server.requests - before == sent
            assert run.status == "failed" and "The provider answered 500: The fake server failed." in run.error


def test_the_model_form_shows_and_bounds_retries(app, client, auth):
    auth.login_as("admin")
    assert 'name="retries"' in client.get("/admin/models/new").text
    form = {"name": "Local", "provider": "openai-compatible", "model_name": "llama3.1:8b",
            "base_url": "http://localhost:11434/v1", "api_key_env": "", "context_window": "8192",
            "max_tokens": "", "temperature": "", "timeout": "10"}
    response = client.post("/admin/models/", data={**form, "retries": "9"})
    assert response.status_code == 422 and "Use a value from 0 to 5." in response.text
    assert client.post("/admin/models/", data={**form, "retries": "2"}).status_code == 302
    with app.app_context():
        config = db.session.scalar(db.select(ModelConfig).where(ModelConfig.name == "Local"))
        assert (config.timeout, config.retries) == (10, 2)
    assert 'name="retries" type="number" step="any" value="2"' in client.get(f"/admin/models/{config.id}").text


def test_a_model_dropped_from_the_cache_has_its_client_closed_once_no_turn_can_use_it(monkeypatch):
    """The process keeps MODELS_KEPT provider clients; one it drops is closed later, not left to the GC."""
    from app.runtime import loop, providers

    monkeypatch.setattr(providers, "MODELS_KEPT", 1)
    monkeypatch.setattr(providers, "RETIRED_CLOSE_SECONDS", 0)
    specs = [providers.ModelSpec(id=None, name=f"Local {n}", provider="openai-compatible", model_name="m",
                                 base_url=f"http://127.0.0.1:{9 + n}/v1", api_key_env=None, context_window=8192,
                                 max_tokens=None, temperature=None, timeout=5, profiles={}) for n in range(2)]

    async def build_both_then_settle():
        first = providers.build_model(specs[0])
        providers.build_model(specs[1])  # the first is dropped from the cache
        while providers._closing or not first.client.is_closed():
            await asyncio.sleep(0)  # the close is scheduled on this loop: let it run
        return first

    first = loop.run(build_both_then_settle(), timeout=30)
    assert first.client.is_closed()


def test_a_wait_on_the_runtime_loop_that_times_out_cancels_what_it_waited_for():
    """A verifier, preview or connection test given up on is not left running (and paying) on the loop."""
    import concurrent.futures
    import threading

    from app.runtime import loop

    started, cancelled = threading.Event(), threading.Event()

    async def model_call_that_never_answers():
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(concurrent.futures.TimeoutError):
        loop.run(model_call_that_never_answers(), timeout=0.5)
    loop.run(asyncio.sleep(0), timeout=60)  # the loop has handled the cancellation (it runs callbacks in order)
    # Once it began, it was cancelled; one given up before it began never begins.
    assert cancelled.wait(60) if started.is_set() else not cancelled.is_set()
