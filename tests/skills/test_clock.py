"""The clock skill: its tool answers through a real agent run, and bad settings are refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall

from app.extensions import db
from app.models import Message, Run
from app.skills.clock import skill
from tests.chat_driver import send, start_chat
from tests.conftest import make_agent


def test_current_time_through_a_run(app, client, auth, scripted_model):
    seen: dict = {}

    async def model(messages, info: AgentInfo):
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            seen["result"] = last.content
            yield f"It is {last.content}"
            return
        seen["tools"] = [tool.name for tool in info.function_tools]
        yield {0: DeltaToolCall("current_time", '{"timezone": "Europe/Rome"}', tool_call_id="c1")}

    config_id = scripted_model(stream_function=model)
    auth.login_as("user")
    with app.app_context():
        agent = make_agent(skills=[{"name": "clock", "config": {"timezone": "UTC"}}], model_config_id=config_id)
        agent_id = agent.id
    conversation_id = start_chat(app, client, agent_id)
    run_id = send(app, client, conversation_id, "What time is it in Rome?")
    with app.app_context():
        answer = db.session.scalar(db.select(Message).where(Message.role == "assistant"))
        assert db.session.get(Run, run_id).status == "succeeded"
    assert seen["tools"] == ["current_time"]
    assert "(Europe/Rome)" in seen["result"]
    assert answer.steps[0]["name"] == "current_time"
    assert answer.content == f"It is {seen['result']}"


def test_unknown_time_zone_is_refused_in_settings():
    with pytest.raises(ValidationError, match="IANA"):
        skill.parse({"timezone": "Mars/Olympus"})
    assert skill.parse({}).timezone == "UTC"
