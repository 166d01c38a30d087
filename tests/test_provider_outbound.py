"""An OpenAI-compatible server's base URL is reached through the outbound guard, like any tool's URL."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests

from app.extensions import db
from app.models import ModelConfig
from tests.chat_driver import outcome, send, start_chat
from tests.fake_openai import ANSWER, fake_openai
from tests.local_http import QuietHandler, serving


def _local_config(app, server, name: str) -> int:
    with app.app_context():
        config = ModelConfig(name=name, provider="openai-compatible", model_name="fake-model",
                             base_url=server.base_url, context_window=8192, timeout=10, profiles={})
        db.session.add(config)
        db.session.commit()
        return config.id


def test_a_local_server_is_refused_until_the_admin_allows_it(app, client, auth):
    auth.login_as("user")
    with fake_openai("answer") as server:
        conversation_id = start_chat(app, client, model_config_id=_local_config(app, server, "Local"))
        with override_allow_model_requests(True):
            run, _message = outcome(app, send(app, client, conversation_id, "Hello?"))
        assert server.requests == 0  # refused before anything was sent
        assert run.status == "failed"
        assert run.error.startswith("refused a connection to 127.0.0.1:")
        assert "is off limits to tools (loopback address)" in run.error and "OUTBOUND_ALLOWED_HOSTS" in run.error

        app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
        conversation_id = start_chat(app, client, model_config_id=_local_config(app, server, "Allowed"))
        with override_allow_model_requests(True):
            run, message = outcome(app, send(app, client, conversation_id, "Hello?"))
        assert run.status == "succeeded", run.error
        assert message.content == ANSWER and server.requests >= 1


def test_test_connection_says_why_a_local_server_is_refused(app, client, auth):
    auth.login_as("admin")
    with fake_openai("answer") as server:
        config_id = _local_config(app, server, "Local")
        with override_allow_model_requests(True):
            response = client.post(f"/admin/models/{config_id}/test", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "off limits" in response.text and "OUTBOUND_ALLOWED_HOSTS" in response.text
    assert server.requests == 0


class Recording(QuietHandler):
    """A server at an internal address: it notes each request's credentials and answers with a secret body."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Recording.seen.append({"path": self.path, "authorization": self.headers.get("Authorization"),
                               "x-api-key": self.headers.get("X-Api-Key")})
        body = json.dumps({"error": {"message": INTERNAL_SECRET, "type": "server_error"}}).encode()
        self.reply(body, "application/json", status=500)

    do_GET = do_POST


INTERNAL_SECRET = "iam/security-credentials/skilldesk-role AKIA-INTERNAL-ONLY"
KEY = "sk-provider-key-of-this-test"
CLOUD_PROVIDERS = ("openai", "openai-chat", "anthropic", "groq")


@pytest.fixture
def internal_server() -> Iterator[str]:
    Recording.seen.clear()
    with serving(Recording) as server:
        yield f"http://127.0.0.1:{server.server_port}/v1"


def _cloud_config(app, provider: str, base_url: str) -> int:
    with app.app_context():
        config = ModelConfig(name=f"Cloud {provider}", provider=provider, model_name="some-model",
                             base_url=base_url, api_key_env="SKILLDESK_TEST_PROVIDER_KEY", context_window=8192,
                             timeout=10, profiles={})
        db.session.add(config)
        db.session.commit()
        return config.id


def _test_connection(client, config_id: int) -> str:
    with override_allow_model_requests(True):  # real HTTP, to a server of this test only
        response = client.post(f"/admin/models/{config_id}/test", headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response.text


@pytest.mark.parametrize("provider", CLOUD_PROVIDERS)
def test_every_providers_base_url_goes_through_the_outbound_guard(app, client, auth, internal_server, provider,
                                                                  monkeypatch):
    monkeypatch.setenv("SKILLDESK_TEST_PROVIDER_KEY", KEY)
    auth.login_as("admin")
    config_id = _cloud_config(app, provider, internal_server)

    text = _test_connection(client, config_id)
    assert Recording.seen == []  # the key never left: nothing was sent
    assert "off limits to tools (loopback address)" in text and "OUTBOUND_ALLOWED_HOSTS" in text

    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the admin allows the host: now it is reached
    text = _test_connection(client, config_id)
    (request,) = Recording.seen
    assert KEY in (request["authorization"] or "") + (request["x-api-key"] or "")
    assert '<p class="error" role="status">✗' in text and "500" in text
    assert INTERNAL_SECRET not in text and "security-credentials" not in text and "server_error" not in text
