"""An OpenAI-compatible server's base URL is reached through the outbound guard, like any tool's URL."""

from __future__ import annotations

from pydantic_ai.models import override_allow_model_requests

from app.extensions import db
from app.models import ModelConfig
from tests.chat_driver import outcome, send, start_chat
from tests.fake_openai import ANSWER, fake_openai


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
