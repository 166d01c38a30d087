"""A third-party skill, installed with pip like any package, reaches the runtime through every hook.

The example package is tests/plugin_example (the one docs/skills/writing-a-skill.md walks through).
It is installed into a directory on sys.path, and a new app finds it through the `skilldesk.skills`
entry-point group, the path built-in skills take too.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai.models.function import AgentInfo, DeltaToolCall

from app import create_app
from app.extensions import db
from app.models import Message, ModelConfig, RunEvent
from app.seed import ensure_defaults
from tests.chat_driver import chat_model, outcome, send, start_chat
from tests.conftest import AuthActions, _empty_tables

EXAMPLE = Path(__file__).parent / "plugin_example"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Install the example package with pip (no index, no network) into a directory of its own."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "source"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
                    "--no-deps", "--disable-pip-version-check", "--target", str(root / "site"), str(source)],
                   check=True)
    return root / "site"


@pytest.fixture
def plugin_app(site, settings, _database, monkeypatch):
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    app = create_app(dict(settings))
    with app.app_context():
        ensure_defaults()
        db.session.commit()
    yield app
    sys.modules.pop("skilldesk_turn_log", None)
    with app.app_context():
        db.session.remove()
        _empty_tables()
        db.engine.dispose()


def test_the_installed_skill_is_registered_from_its_entry_point(plugin_app):
    skill = plugin_app.extensions["skills"]["turn_log"]
    assert skill.title == "Turn log"
    assert type(skill).__module__ == "app.runtime.skill"  # the contract's own Skill, not a copy
    assert skill.pick_model and skill.finish_turn and skill.after_turn


def test_a_plugin_uses_every_hook_in_a_real_turn(plugin_app, scripted_model):
    seen: dict = {}

    async def agents_model(messages, info: AgentInfo):  # the agent's own model: must not be asked
        seen["agent's model"] = True
        yield "from the agent's model"

    async def picked_model(messages, info: AgentInfo):
        seen["tools"] = [tool.name for tool in info.function_tools]
        if not any(part.part_kind == "tool-return" for message in messages for part in message.parts):
            yield {0: DeltaToolCall(name="shout", json_args='{"text": "hello"}')}
        else:
            yield "The picked model says hello"

    agent_model_id = chat_model(scripted_model, agents_model)
    picked_id = chat_model(scripted_model, picked_model)
    client = plugin_app.test_client()
    with plugin_app.app_context():
        picked_name = db.session.get(ModelConfig, picked_id).name
    AuthActions(plugin_app, client).login_as("user")
    conversation_id = start_chat(plugin_app, client, model_config_id=agent_model_id,
                                 skills=[{"name": "turn_log", "config": {"model": picked_name}}])
    ended = importlib.import_module("skilldesk_turn_log").ENDED  # installed above, not importable before

    run_id = send(plugin_app, client, conversation_id, "Say hello")
    run, message = outcome(plugin_app, run_id)

    assert run.status == "succeeded", run.error
    assert "shout" in seen["tools"]  # build: the skill's tool was offered
    assert message.steps[0]["result"] == "HELLO"  # ...and ran
    assert "agent's model" not in seen and message.content == "The picked model says hello"  # pick_model
    with plugin_app.app_context():
        notice = db.session.scalar(db.select(Message).where(Message.conversation_id == conversation_id,
                                                            Message.role == "notice"))
        assert notice.content == "Turn log: the turn succeeded."  # finish_turn, stored with the turn
        assert notice.run_id == run_id
        shown = db.session.scalars(db.select(RunEvent.type).where(RunEvent.run_id == run_id)).all()
        assert "notice" in shown  # ...and shown on the page through the run's stream
    assert (conversation_id, "succeeded") in ended  # after_turn, once the turn was stored
