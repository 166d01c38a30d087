"""Model profiles by role: settings and output type by role, the admin's overrides, and the provider quirks."""

from __future__ import annotations

import pytest
from pydantic_ai.tools import DeferredToolRequests

from app.extensions import db
from app.models import ModelConfig
from app.runtime.profiles import Quirk, profile_for
from app.runtime.providers import ModelSpec, build_model
from tests.conftest import make_agent
from tests.skill_chat import Script, chat_with, scripted


def spec(provider="openai-compatible", model="llama3.1:8b", profiles=None, temperature=None) -> ModelSpec:
    return ModelSpec(None, "Test", provider, model, "http://127.0.0.1:9/v1", None, 8192, None, temperature, 30.0,
                     profiles or {})


def test_an_unregistered_model_keeps_the_role_defaults():
    profile = profile_for(spec())
    assert profile.quirks == ()
    assert profile.settings("documentation")["temperature"] == 0.2
    assert profile.settings("utility")["temperature"] == 0
    assert "temperature" not in profile.settings("orchestration")
    assert profile.settings("orchestration")["first_event_timeout"] == 30.0  # streamed: bound until it starts
    assert profile.settings("utility")["request_timeout"] == 30.0
    assert profile.output_type("orchestration") == [str, DeferredToolRequests]
    assert profile.output_type("documentation") is str and profile.output_type("utility") is str


def test_the_admins_role_overrides_win_and_the_old_chat_role_is_orchestration():
    profile = profile_for(spec(profiles={"chat": {"max_tokens": 100}, "documentation": {"temperature": 0.5}},
                               temperature=0.9))
    assert profile.settings("orchestration")["max_tokens"] == 100
    assert profile.settings("orchestration")["temperature"] == 0.9  # the configuration's own
    assert profile.settings("documentation")["temperature"] == 0.5
    assert profile.settings("chat") == profile.settings("orchestration")
    with pytest.raises(ValueError, match="Unknown model role"):
        profile.settings("poetry")


def test_reasoning_in_a_native_field_is_a_registered_quirk():
    profile = profile_for(spec(model="deepseek-reasoner"))
    assert [quirk.name for quirk in profile.quirks] == ["reasoning_content"]
    model = build_model(spec(model="deepseek-reasoner"))
    assert model.profile["openai_chat_thinking_field"] == "reasoning_content"
    assert build_model(spec()).profile.get("openai_chat_thinking_field") != "reasoning_content"
    # the same model name on another provider is not matched: quirks belong to a provider
    assert profile_for(spec(provider="anthropic", model="deepseek-reasoner")).quirks == ()


def test_a_quirk_can_drop_a_role_setting():
    profile = profile_for(spec(provider="openai-chat", model="o3-mini"))
    assert "temperature" not in profile.settings("utility")
    assert "temperature" not in profile.settings("documentation")


def test_quirks_are_looked_up_in_the_registry():
    extra = Quirk("short", "test", frozenset({"groq"}), r"^tiny", settings={"utility": {"max_tokens": 5}})
    profile = profile_for(spec(provider="groq", model="tiny-1"), quirks=lambda: [extra])
    assert profile.settings("utility")["max_tokens"] == 5 and profile.settings("title")["max_tokens"] == 60


def test_the_agent_turn_runs_with_the_orchestration_profile(app, client, auth, scripted_model):
    script = Script("Hi.")
    config_id = scripted(scripted_model, script)
    with app.app_context():
        db.session.get(ModelConfig, config_id).profiles = {"orchestration": {"temperature": 0.7, "max_tokens": 321}}
        db.session.commit()
        agent_id = make_agent(model_config_id=config_id).id
    auth.login_as("user")
    run, _message = chat_with(app, client, agent_id)
    assert run.status == "succeeded"
    assert script.infos[0].model_settings["temperature"] == 0.7
    assert script.infos[0].model_settings["max_tokens"] == 321
