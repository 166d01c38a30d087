"""Level 1: a case's scripted replies as a pydantic-ai FunctionModel (the only fake is the model)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from app.evals.dataset import Reply


class ScriptedReplies:
    """Answer each model request with the next reply; after the last, report what the tools returned."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.taken = 0

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """Answer a title request with a title, else the next reply (an error raises), else the tools' results."""
        if info.output_tools and not info.allow_text_output:  # the title job after the first answer
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Evaluation"})])
        if self.taken < len(self.replies):
            reply = self.replies[self.taken]
            self.taken += 1
            if reply.status is not None:  # the provider's error, as a provider model raises it
                raise ModelHTTPError(reply.status, "scripted", body={"error": {"message": reply.text}})
            parts: list[Any] = [TextPart(reply.text)] if reply.text else []
            parts += [ToolCallPart(call.tool, call.args, f"eval-{self.taken}-{index}")
                      for index, call in enumerate(reply.calls)]
            return ModelResponse(parts=parts or [TextPart("")])
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returned) or "Done")])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        """Stream what `respond` answers: text as text, tool calls as deltas."""
        for index, part in enumerate(self.respond(messages, info).parts):
            if isinstance(part, TextPart):
                if part.content:
                    yield part.content
            else:
                yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                            tool_call_id=part.tool_call_id)}


def scripted_model(replies: list[Reply], context_window: int = 32_000) -> FunctionModel:
    """Return a FunctionModel that follows the replies."""
    script = ScriptedReplies(replies)
    return FunctionModel(script.respond, stream_function=script.stream, profile={"context_window": context_window})
