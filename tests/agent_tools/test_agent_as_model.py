"""One Skilldesk agent as the model of another: pydantic-ai's OpenAIChatModel pointed at Skilldesk's /v1/."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from app.extensions import db
from app.models import ModelConfig, Run
from tests.agent_tools.conftest import token_for
from tests.chat_driver import chat_model, outcome, send, start_chat, words
from tests.conftest import make_agent


@pytest.fixture
def expert(app, scripted_model):
    """The inner agent: it answers every question with its own words."""
    seen = []

    async def stream(messages, info):
        seen.append(info.instructions)
        for part in ("The expert ", "says: ", "forty-two."):
            yield part

    with app.app_context():
        return make_agent("Expert", instructions="You are the expert.",
                          model_config_id=chat_model(scripted_model, stream)).slug, seen


def test_a_skilldesk_agent_is_the_model_of_another(app, client, auth, served, expert, monkeypatch):
    slug, seen = expert
    user_id = auth.login_as("user")
    monkeypatch.setenv("SKILLDESK_TEST_AGENT_TOKEN", token_for(app, user_id, scopes=("openai",)))
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    with app.app_context():
        config = ModelConfig(name="Skilldesk expert", provider="openai-compatible", model_name=slug,
                             base_url=served.url + "/v1", api_key_env="SKILLDESK_TEST_AGENT_TOKEN",
                             context_window=8192, timeout=30, profiles={})
        db.session.add(config)
        db.session.commit()
        outer = make_agent("Front desk", instructions="You are the front desk.", model_config_id=config.id).id
    conversation_id = start_chat(app, client, agent_id=outer)
    with override_allow_model_requests(True):
        run, message = outcome(app, send(app, client, conversation_id, "What is the answer?"))
    assert run.status == "succeeded", run.error
    assert message.content == "The expert says: forty-two."
    # The outer agent's instructions reached the expert as a system message, below the expert's own.
    assert seen[0].index("You are the expert.") < seen[0].index("You are the front desk.")
    with app.app_context():
        inner = db.session.scalar(db.select(Run).where(Run.trigger == "openai"))
        assert inner.status == "succeeded" and inner.user_id == user_id


def test_pydantic_ai_streams_from_a_skilldesk_agent(app, auth, served, scripted_model):
    with app.app_context():
        slug = make_agent("Streamer", model_config_id=chat_model(scripted_model, words("One ", "two ", "three."))).slug
    secret = token_for(app, auth.create("user"), scopes=("openai",))
    model = OpenAIChatModel(slug, provider=OpenAIProvider(base_url=served.url + "/v1", api_key=secret))
    agent = PydanticAgent(model, instructions="Count.")

    async def streamed() -> tuple[list[str], object]:
        async with agent.run_stream("Count to three") as result:
            texts = [text async for text in result.stream_output(debounce_by=None)]
            return texts, result.usage

    with override_allow_model_requests(True):
        texts, usage = asyncio.run(streamed())
    assert texts[-1] == "One two three." and usage.output_tokens > 0
