"""Model profiles by role: settings and output type by role, the admin's overrides, and the provider quirks."""

from __future__ import annotations

import pytest
from pydantic_ai.tools import DeferredToolRequests

from app.extensions import db
from app.knowledge.embeddings import embedder_from_config
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import put_document
from app.models import Agent, KnowledgeBase, ModelConfig
from app.runtime.model_spec import ModelSpec
from app.runtime.profiles import Quirk, profile_for
from app.runtime.providers import build_model
from app.seed import DOCS_KB, WORKSPACE_ASSISTANT
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


GUIDE = "# Backups\n\nBackups run every night at 02:00 and are kept for 30 days."
ROLE_PROFILES = {"orchestration": {"temperature": 0.7, "max_tokens": 321},
                 "documentation": {"temperature": 0.1, "max_tokens": 222}}


@pytest.fixture
def workspace_assistant_on(app, tmp_path, scripted_model):
    """Put the seeded Workspace assistant on a scripted model with both profiles, its docs one small guide."""
    embedder_from_config({"EMBEDDINGS": "minilm"}).embed(["warm up"])
    app.config["CHROMA_PATH"] = str(tmp_path / "chroma")

    def put_on(script: Script) -> int:
        config_id = scripted(scripted_model, script)
        with app.app_context():
            db.session.get(ModelConfig, config_id).profiles = ROLE_PROFILES
            assistant = db.session.scalar(db.select(Agent).where(Agent.name == WORKSPACE_ASSISTANT))
            assistant.model_config_id = config_id
            docs = db.session.scalar(db.select(KnowledgeBase).where(KnowledgeBase.name == DOCS_KB))
            docs.folder = None
            put_document(docs, "upload:backups.md", "backups.md", GUIDE.encode())
            db.session.commit()
            index_knowledge_base.delay(docs.id)
            return assistant.id
    return put_on


def _settings(info) -> tuple:
    return info.model_settings["temperature"], info.model_settings["max_tokens"]


def test_the_workspace_assistant_writes_a_documentation_answer_with_the_documentation_profile(
        app, client, auth, workspace_assistant_on):
    script = Script([("search_knowledge", {"query": "when do backups run"})], "Backups run nightly at 02:00 [1].")
    auth.login_as("user")
    run, message = chat_with(app, client, workspace_assistant_on(script), "When do backups run?")
    assert run.status == "succeeded", run.error
    assert "02:00" in message.content and "/knowledge/passages/" in message.content
    deciding, answering = script.infos
    assert _settings(deciding) == (0.7, 321)  # choosing the tool: the agent's turn
    assert _settings(answering) == (0.1, 222)  # writing from the documentation it found


def test_a_turn_that_reads_no_documentation_keeps_the_orchestration_profile(app, client, auth,
                                                                            workspace_assistant_on):
    script = Script("Hello, what shall we build?")
    auth.login_as("user")
    run, message = chat_with(app, client, workspace_assistant_on(script), "Hi")
    assert message.content == "Hello, what shall we build?"
    assert [_settings(info) for info in script.infos] == [(0.7, 321)]
