"""The editor's preview: one message against the agent as configured, nothing stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from pydantic_ai.exceptions import AgentRunError, ModelHTTPError
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.usage import UsageLimits

from app.runtime import loop
from app.runtime.builder import AgentSpec, Person, build_agent
from app.runtime.failures import provider_error
from app.runtime.outcome import step_result
from app.runtime.providers import ModelUnavailable


@dataclass
class Preview:
    answer: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


async def _preview(app: Flask, spec: AgentSpec, person: Person, prompt: str) -> Preview:
    preview = Preview()
    try:
        built = build_agent(app, spec, person, conversation_id=None, run_id=None, extras={"preview": True})
        result = await built.agent.run(prompt, usage_limits=UsageLimits(request_limit=spec.max_requests))
    except ModelHTTPError as error:
        preview.error = provider_error(error)
        return preview
    except (AgentRunError, ModelUnavailable, LookupError, ValueError) as error:
        preview.error = str(error)
        return preview
    calls: dict[str, dict[str, Any]] = {}
    for message in result.new_messages():
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                calls[part.tool_call_id] = {"id": part.tool_call_id, "name": part.tool_name,
                                            "args": part.args_as_json_str(), "result": None, "failed": False}
            elif isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_call_id in calls:
                content, failed = step_result(part)
                calls[part.tool_call_id].update(result=content[:4000], failed=failed)
    preview.steps = list(calls.values())
    preview.answer = "\n\n".join(p.content for m in result.new_messages() if isinstance(m, ModelResponse)
                                 for p in m.parts if isinstance(p, TextPart))
    return preview


def run_preview(app: Flask, spec: AgentSpec, person: Person, prompt: str, timeout: float = 120) -> Preview:
    """Run the preview on the runtime loop and wait for it."""
    return loop.run(_preview(app, spec, person, prompt), timeout)
