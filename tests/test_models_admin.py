"""Model configurations (admin): the form and its errors, defaults, deletion, and Test connection."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests

from app.extensions import db
from app.models import Agent, ModelConfig
from tests.conftest import make_agent
from tests.local_http import QuietHandler, serving

HX = {"HX-Request": "true"}
VALID = {"name": "Local llama", "provider": "openai-compatible", "model_name": "llama3.1:8b",
         "base_url": "http://localhost:11434/v1", "api_key_env": "", "context_window": "8192",
         "max_tokens": "1024", "temperature": "0.3", "timeout": "30"}


@pytest.fixture
def admin(auth) -> int:
    return auth.login_as("admin")


def configs() -> dict[str, ModelConfig]:
    return {c.name: c for c in db.session.scalars(db.select(ModelConfig))}


def field_error(html: str, field: str) -> str | None:
    """Return the error shown beside a field of the model form."""
    import re

    found = re.search(rf'<div class="field invalid"><label for="{field}">.*?<p class="error">([^<]*)</p>',
                      html, re.S)
    return found.group(1) if found else None


def test_a_fresh_install_has_the_offline_model_as_default(app, client, admin):
    with app.app_context():
        (offline,) = configs().values()
        assert (offline.provider, offline.is_default) == ("offline", True)
    page = client.get("/admin/models/")
    assert page.status_code == 200 and "Built-in offline model" in page.text and "default" in page.text


def test_create_and_edit_a_configuration_with_profiles(app, client, admin):
    response = client.post("/admin/models/", data={**VALID, "profile-title-max_tokens": "40",
                                                    "profile-summary-temperature": "0.1"})
    assert response.status_code == 302
    with app.app_context():
        config = configs()["Local llama"]
        assert (config.provider, config.model_name, config.base_url) == (
            "openai-compatible", "llama3.1:8b", "http://localhost:11434/v1")
        settings = (config.context_window, config.max_tokens, config.temperature, config.timeout)
        assert settings == (8192, 1024, 0.3, 30)
        assert config.profiles == {"title": {"max_tokens": 40}, "summary": {"temperature": 0.1}}
        assert config.api_key_env is None and not config.is_default
        config_id = config.id
    assert response.location == f"/admin/models/{config_id}"
    page = client.get(f"/admin/models/{config_id}").text
    assert 'value="llama3.1:8b"' in page and 'name="profile-title-max_tokens"' in page
    changed = client.post(f"/admin/models/{config_id}", data={**VALID, "model_name": "qwen3:4b"})
    assert changed.status_code == 302
    with app.app_context():
        assert configs()["Local llama"].model_name == "qwen3:4b"


@pytest.mark.parametrize(("change", "field", "error"), [
    ({"name": ""}, "name", "Give it a name of at most 80 characters."),
    ({"name": "n" * 81}, "name", "Give it a name of at most 80 characters."),
    ({"name": "Built-in offline model"}, "name", "Another configuration already has this name."),
    ({"provider": "skynet"}, "provider", "Choose a provider."),
    ({"model_name": ""}, "model_name", "Name the model"),
    ({"base_url": ""}, "base_url", "An OpenAI-compatible server needs its base URL"),
    ({"base_url": "ftp://example.org"}, "base_url", "Use an http:// or https:// URL"),
    ({"base_url": "localhost:11434"}, "base_url", "Use an http:// or https:// URL"),
    ({"api_key_env": "sk-proj-abcdef123456"}, "api_key_env", "not the key itself"),
    ({"provider": "openai", "api_key_env": ""}, "api_key_env", "Name the environment variable"),
    ({"context_window": ""}, "context_window", "Required."),
    ({"context_window": "12"}, "context_window", "Use a value from 512 to 1e+07."),
    ({"context_window": "lots"}, "context_window", "Use a whole number."),
    ({"temperature": "3"}, "temperature", "Use a value from 0 to 2."),
    ({"timeout": "0"}, "timeout", "Use a value from 1 to 3600."),
    ({"max_tokens": "-5"}, "max_tokens", "Use a value from 1 to 1e+06."),
])
def test_bad_input_is_a_422_with_the_error_beside_the_field(app, client, admin, change, field, error):
    response = client.post("/admin/models/", data={**VALID, **change})
    assert response.status_code == 422
    assert error in (field_error(response.text, field) or ""), response.text[-3000:]
    with app.app_context():
        assert list(configs()) == ["Built-in offline model"]


def test_a_bad_profile_value_is_shown_in_its_cell(app, client, admin):
    response = client.post("/admin/models/", data={**VALID, "profile-title-max_tokens": "zero"})
    assert response.status_code == 422
    assert 'name="profile-title-max_tokens"' in response.text and "Use a whole number." in response.text


def test_only_one_configuration_is_the_default(app, client, admin):
    assert client.post("/admin/models/", data={**VALID, "is_default": "on"}).status_code == 302
    with app.app_context():
        found = configs()
        assert found["Local llama"].is_default and not found["Built-in offline model"].is_default


def test_the_default_cannot_be_deleted_and_others_can(app, client, admin):
    with app.app_context():
        offline_id = configs()["Built-in offline model"].id
    response = client.post(f"/admin/models/{offline_id}/delete", follow_redirects=True)
    assert "Choose another default before deleting this configuration." in response.text
    client.post("/admin/models/", data=VALID)
    with app.app_context():
        local_id = configs()["Local llama"].id
        agent_id = make_agent(model_config_id=local_id).id
    assert client.post(f"/admin/models/{local_id}/delete").status_code == 302
    with app.app_context():
        assert list(configs()) == ["Built-in offline model"]
        assert db.session.get(Agent, agent_id).model_config_id is None  # it runs on the default now


def test_test_connection_against_the_offline_model(app, client, admin):
    with app.app_context():
        offline_id = configs()["Built-in offline model"].id
    response = client.post(f"/admin/models/{offline_id}/test", headers=HX)
    assert response.status_code == 200
    assert '<p class="ok" role="status">✓' in response.text and "offline model" in response.text


def test_test_connection_names_a_missing_key_variable(app, client, admin, monkeypatch):
    monkeypatch.delenv("SKILLDESK_TEST_MISSING_KEY", raising=False)
    client.post("/admin/models/", data={**VALID, "name": "Cloud", "provider": "openai-chat",
                                        "model_name": "gpt-4.1-mini", "base_url": "",
                                        "api_key_env": "SKILLDESK_TEST_MISSING_KEY"})
    with app.app_context():
        cloud_id = configs()["Cloud"].id
    response = client.post(f"/admin/models/{cloud_id}/test", headers=HX)
    assert '<p class="error" role="status">✗' in response.text
    assert "The environment variable SKILLDESK_TEST_MISSING_KEY is not set" in response.text


class Refusing(QuietHandler):
    """An OpenAI-compatible server that answers every request with a 401, as a provider does."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        length = int(self.headers.get("Content-Length", 0))
        Refusing.seen.append({"path": self.path, "authorization": self.headers.get("Authorization"),
                              "body": json.loads(self.rfile.read(length) or b"{}")})
        body = json.dumps({"error": {"message": "Incorrect API key provided: sk-te**t.", "type":
                                     "invalid_request_error", "code": "invalid_api_key"}}).encode()
        self.reply(body, "application/json", status=401)


@pytest.fixture
def refusing_server() -> Iterator[str]:
    Refusing.seen.clear()
    with serving(Refusing) as server:
        yield f"http://127.0.0.1:{server.server_port}/v1"


def test_test_connection_shows_the_providers_401_in_skilldesks_words(app, client, admin, refusing_server, monkeypatch):
    monkeypatch.setenv("SKILLDESK_TEST_KEY", "sk-test-key")
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the admin allows the local server
    client.post("/admin/models/", data={**VALID, "name": "Refuser", "base_url": refusing_server,
                                        "api_key_env": "SKILLDESK_TEST_KEY"})
    with app.app_context():
        config_id = configs()["Refuser"].id
    with override_allow_model_requests(True):  # a real HTTP request, to a server of this test only
        response = client.post(f"/admin/models/{config_id}/test", headers=HX)
    assert response.status_code == 200
    assert '<p class="error" role="status">✗' in response.text
    assert "The provider answered 401: the API key was refused; check the key in SKILLDESK_TEST_KEY." in response.text
    assert "Incorrect API key" not in response.text  # the server's own words are not shown
    (request,) = Refusing.seen  # one tiny request, no retries
    assert request["path"] == "/v1/chat/completions" and request["authorization"] == "Bearer sk-test-key"
    assert request["body"]["model"] == "llama3.1:8b" and request["body"]["max_completion_tokens"] == 16
