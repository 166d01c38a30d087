"""The Model picker skill: the composer's dropdown, its owner-checked endpoint, and the next turn's model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import ModelResponse, ToolCallPart

from app.extensions import db
from app.models import Conversation, ModelConfig
from app.runtime.skill import SkillContext
from app.skills.model_picker import Config, skill
from tests.chat_driver import answer_of, send, start_chat
from tests.conftest import make_agent

HTMX = {"HX-Request": "true"}


class Named:
    """A scripted model that answers with its own name, and counts the chat turns it served."""

    def __init__(self, name: str) -> None:
        self.name, self.turns = name, 0

    async def stream(self, messages, info):
        self.turns += 1
        yield f"{self.name} answering"

    def title(self, messages, info) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Picked chat"})])


def setup_models(app, scripted_model) -> dict:
    models = {}
    for name in ("house", "fast", "smart", "forbidden"):
        script = Named(name)
        config_id = scripted_model(function=script.title, stream_function=script.stream)
        models[name] = (config_id, script)
    with app.app_context():
        smart_name = db.session.get(ModelConfig, models["smart"][0]).name
        agent = make_agent("Picky", model_config_id=models["house"][0], skills=[
            {"name": "model_picker", "config": {"models": [str(models["fast"][0]), smart_name]}}])
        models["agent_id"] = agent.id
    return models


def test_the_dropdown_lists_the_agents_default_and_the_allowed_models(app, client, auth, scripted_model):
    models = setup_models(app, scripted_model)
    auth.login_as("user")
    conversation_id = start_chat(app, client, models["agent_id"])

    page = client.get(f"/chat/{conversation_id}").text

    assert 'id="model-picker"' in page and 'name="model_config_id"' in page
    with app.app_context():
        names = {key: db.session.get(ModelConfig, models[key][0]).name for key in ("house", "fast", "smart",
                                                                                    "forbidden")}
    assert f"{names['house']} (default)" in page
    assert names["fast"] in page and names["smart"] in page and names["forbidden"] not in page


def test_the_choice_applies_from_the_next_turn_and_is_remembered_per_conversation(
        app, client, auth, scripted_model):
    models = setup_models(app, scripted_model)
    auth.login_as("user")
    conversation_id = start_chat(app, client, models["agent_id"])
    other_id = start_chat(app, client, models["agent_id"])

    first = send(app, client, conversation_id, "Hello")
    assert answer_of(app, first) == "house answering"

    fast_id = models["fast"][0]
    response = client.post(f"/chat/{conversation_id}/model", data={"model_config_id": str(fast_id)},
                           headers=HTMX)
    assert response.status_code == 200
    assert f'<option value="{fast_id}" selected>' in response.text
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).model_config_id == fast_id

    second = send(app, client, conversation_id, "Again")
    third = send(app, client, conversation_id, "And again")
    assert answer_of(app, second) == answer_of(app, third) == "fast answering"
    assert models["fast"][1].turns == 2
    # Another conversation with the same agent keeps the agent's own model.
    assert answer_of(app, send(app, client, other_id, "Hi")) == "house answering"
    assert f'<option value="{fast_id}" selected>' in client.get(f"/chat/{conversation_id}").text

    # An empty choice goes back to the agent's default; a plain form post redirects to the chat.
    response = client.post(f"/chat/{conversation_id}/model", data={"model_config_id": ""})
    assert response.status_code == 302 and response.location.endswith(f"/chat/{conversation_id}")
    assert answer_of(app, send(app, client, conversation_id, "Back")) == "house answering"


def test_a_model_the_admin_did_not_allow_is_refused_with_422(app, client, auth, scripted_model):
    models = setup_models(app, scripted_model)
    auth.login_as("user")
    conversation_id = start_chat(app, client, models["agent_id"])

    for value in (str(models["forbidden"][0]), "999999", "not-a-number"):
        response = client.post(f"/chat/{conversation_id}/model", data={"model_config_id": value},
                               headers=HTMX)
        assert response.status_code == 422
        assert 'id="model-picker"' in response.text and "Choose one of the models offered" in response.text
    forbidden = str(models["forbidden"][0])
    response = client.post(f"/chat/{conversation_id}/model", data={"model_config_id": forbidden})
    assert response.status_code == 422 and "Choose one of the models offered" in response.text
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).model_config_id is None
    assert answer_of(app, send(app, client, conversation_id, "Hi")) == "house answering"


def test_only_the_owner_may_choose_and_only_where_the_agent_has_a_picker(app, client, auth, scripted_model):
    models = setup_models(app, scripted_model)
    auth.login_as("user")
    conversation_id = start_chat(app, client, models["agent_id"])
    with app.app_context():
        plain = make_agent("Plain", model_config_id=models["house"][0]).id
    plain_conversation = start_chat(app, client, plain)
    assert 'id="model-picker"' not in client.get(f"/chat/{plain_conversation}").text
    fast = str(models["fast"][0])
    response = client.post(f"/chat/{plain_conversation}/model", data={"model_config_id": fast}, headers=HTMX)
    assert response.status_code == 422

    auth.logout()
    auth.login_as("user")
    response = client.post(f"/chat/{conversation_id}/model", data={"model_config_id": fast})
    assert response.status_code == 404
    auth.logout()
    response = client.post(f"/chat/{conversation_id}/model", data={"model_config_id": ""})
    assert response.status_code == 302 and "/login" in response.location
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).model_config_id is None


def test_settings_and_build(app):
    with pytest.raises(ValidationError, match="at least one"):
        Config(models=["", "  "])
    assert Config(models=[" fast ", "fast", "3"]).models == ["fast", "3"]
    assert skill.gives_tools is False
    assert skill.built({"models": ["fast"]}, SkillContext(app=app, user_id=None, agent_id=None)) == []
