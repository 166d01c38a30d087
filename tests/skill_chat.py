"""Test a skill in real runs: a model that follows a script, and a chat over HTTP with an agent that has the skill."""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask
from flask.testing import FlaskClient
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall

from app.models import Message, Run
from app.runtime.untrusted import unfence
from tests.chat_driver import outcome, send, start_chat
from tests.conftest import make_agent


class Script:
    """A scripted model: a step is a list of tool calls or an answer; then it says what the tools returned."""

    def __init__(self, *steps: list[tuple[str, dict]] | str) -> None:
        self.steps, self.infos, self.retries, self.seen = list(steps), [], [], []

    def respond(self, messages, info) -> ModelResponse:
        """Answer a title request with a title, else take the next step, else report the tools' results."""
        if info.output_tools and not info.allow_text_output:  # the title job after the first answer
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Scripted"})])
        self.infos.append(info)
        self.seen.append(list(messages))
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        self.retries += [(p.content, p.retry.attempt) for p in returned
                         if getattr(p, "outcome", "") == "retried"]
        if len(self.infos) <= len(self.steps):
            calls = self.steps[len(self.infos) - 1]
            if isinstance(calls, str):
                return ModelResponse(parts=[TextPart(calls)])
            return ModelResponse(parts=[ToolCallPart(name, args, f"call-{len(self.infos)}-{index}")
                                        for index, (name, args) in enumerate(calls)])
        # Tool results reach a model fenced as data (app/runtime/untrusted.py): it reports what they hold.
        return ModelResponse(parts=[TextPart(" | ".join(unfence(str(p.content)) for p in returned) or "Done")])

    def stream(self, messages, info):
        """Stream what respond would answer."""
        return streamed(self.respond(messages, info))


async def streamed(response: ModelResponse):
    """Stream a scripted response as a model does: text as text, tool calls as deltas."""
    for index, part in enumerate(response.parts):
        if isinstance(part, TextPart):
            yield part.content
        else:
            yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                        tool_call_id=part.tool_call_id)}


def scripted(scripted_model: Callable[..., int], script: Script) -> int:
    """Register the script as a model; return its ModelConfig id."""
    return scripted_model(function=script.respond, stream_function=script.stream)


def chat_with(app: Flask, client: FlaskClient, agent_id: int, text: str = "Go",
              timeout: float = 30.0) -> tuple[Run, Message]:
    """Start a chat with the agent over HTTP, send one message, wait for the run; return what it stored."""
    conversation_id = start_chat(app, client, agent_id)
    return outcome(app, send(app, client, conversation_id, text, timeout=timeout))


def chat(app: Flask, client: FlaskClient, skill: str, settings: dict, *, model_id: int | None = None,
         text: str = "Go", name: str = "Helper", timeout: float = 30.0) -> tuple[Run, Message]:
    """Make an agent with the skill, chat with it over HTTP, wait for the run; return what it stored."""
    with app.app_context():
        agent_id = make_agent(name, skills=[{"name": skill, "config": settings}], model_config_id=model_id).id
    return chat_with(app, client, agent_id, text, timeout)
