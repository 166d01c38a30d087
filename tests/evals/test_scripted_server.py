"""The scripted OpenAI-compatible server speaks OpenAI's chat completions, streamed and not, as clients read them."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from app.evals.dataset import Reply
from app.evals.scripted_server import FINAL, TITLE, ScriptedServer
from app.runtime.titles import INSTRUCTIONS as TITLE_INSTRUCTIONS


@pytest.fixture
def server():
    running = ScriptedServer()
    yield running
    running.close()


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0) as sdk:
        yield sdk


def run_agent(server: ScriptedServer, prompt: str, tools=(), **agent_kwargs):
    """Run a pydantic-ai agent on OpenAIChatModel against the server, streaming its events; return the output."""

    async def run():
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as sdk:
            agent = Agent(OpenAIChatModel("scripted", provider=OpenAIProvider(openai_client=sdk)), **agent_kwargs)
            for tool in tools:
                agent.tool_plain(tool)
            output = None
            async with agent.run_stream_events(prompt) as stream:
                async for event in stream:
                    output = getattr(getattr(event, "result", None), "output", output)
            return output

    with override_allow_model_requests(True):
        return asyncio.run(run())


def test_a_streamed_answer_arrives_in_pieces_with_usage_and_the_replies_go_in_order(server, client):
    server.load([Reply(text="First, as scripted."), Reply(text="Second.")])
    pieces, usage = [], None
    for chunk in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                         stream=True, stream_options={"include_usage": True}):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        usage = chunk.usage or usage
    assert len(pieces) > 1 and "".join(pieces) == "First, as scripted."
    assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    second = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
    assert second.choices[0].message.content == "Second." and second.choices[0].finish_reason == "stop"
    # After the last reply, a fixed short answer, whatever is asked.
    third = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "more?"}])
    assert third.choices[0].message.content == FINAL
    assert [body["messages"][-1]["content"] for body in server.received] == ["hi", "again", "more?"]


def test_tool_calls_stream_as_delta_tool_calls_beside_text(server, client):
    server.load([Reply(text="Looking it up.", calls=[{"tool": "lookup", "args": {"name": "Ada", "ids": [1, 2]}},
                                                       {"tool": "count", "args": {}}])])
    calls: dict[int, dict] = {}
    text, finish = "", None
    for chunk in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                         stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
            entry["id"] = call.id or entry["id"]
            entry["name"] += call.function.name or "" if call.function else ""
            entry["arguments"] += (call.function.arguments or "") if call.function else ""
        finish = chunk.choices[0].finish_reason or finish
    assert text == "Looking it up." and finish == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("lookup", {"name": "Ada", "ids": [1, 2]}), ("count", {})]
    assert len({c["id"] for c in calls.values()}) == 2


def test_pydantic_ai_runs_its_tool_loop_against_it(server):
    server.load([Reply(calls=[{"tool": "double", "args": {"number": 21}}]), Reply(text="Twice 21 is 42."),
                 Reply(text="Never sent.")])
    seen: list[int] = []

    def double(number: int) -> int:
        seen.append(number)
        return number * 2

    assert run_agent(server, "What is twice 21?", tools=[double]) == "Twice 21 is 42."
    assert seen == [21] and len(server.received) == 2
    tool_message = server.received[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "42"


def test_a_title_request_gets_a_title_and_takes_no_reply(server, client):
    class Title(BaseModel):
        title: str

    server.load([Reply(text="The scripted answer.")])
    titled = run_agent(server, "Create a table Contacts", instructions=TITLE_INSTRUCTIONS, output_type=Title)
    assert titled.title == TITLE
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "The scripted answer."


def test_an_error_reply_is_an_http_error_with_the_providers_message(server, client):
    server.load([Reply(status=503, text="Overloaded, see https://status.example.com")])
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 503 and "Overloaded" in str(raised.value.body)


def test_the_cases_pages_are_served_and_nothing_else(server):
    server.load([], pages={"notice": "<p>Offices close at 17:00.</p>", "plain": "Just text."})
    page = httpx.get(f"{server.origin}/pages/notice")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text == "<p>Offices close at 17:00.</p>"
    assert httpx.get(f"{server.origin}/pages/plain").headers["content-type"].startswith("text/plain")
    assert httpx.get(f"{server.origin}/pages/other").status_code == 404
    assert httpx.post(f"{server.origin}/v1/embeddings", json={}).status_code == 404
    server.load([])  # a new case forgets the last one's pages and requests
    assert httpx.get(f"{server.origin}/pages/notice").status_code == 404 and server.received == []


def test_it_does_not_read_the_feedback_it_is_sent(server):
    """A stubborn model: asked again with feedback, it answers its next scripted reply all the same."""
    server.load([Reply(text="I created the table."), Reply(text="I created the table.")])
    answers: list[str] = []

    async def run():
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as sdk:
            agent = Agent(OpenAIChatModel("scripted", provider=OpenAIProvider(openai_client=sdk)), retries=1)

            @agent.output_validator
            def refuse(text: str) -> str:
                answers.append(text)
                raise ModelRetry("No table was created: say so.")

            await agent.run("Create a table.")

    with override_allow_model_requests(True), pytest.raises(UnexpectedModelBehavior):
        asyncio.run(run())
    assert answers == ["I created the table.", "I created the table."]
    assert "No table was created: say so." in json.dumps(server.received[1]["messages"])
