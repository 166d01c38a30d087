"""The runtime with scripted models: history across turns, tool failures, provider errors, Stop, the cap."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import DeltaToolCall
from pydantic_ai.toolsets import FunctionToolset

from app.extensions import db
from app.models import Conversation, Message, Run, RunEvent
from app.runtime import execution, failures
from app.runtime.skill import Skill
from tests.chat_driver import chat_model, outcome, send, start_chat, words
from tests.conftest import make_agent

# --- history --------------------------------------------------------------------------------------

def test_history_round_trips_across_turns(app, client, auth, scripted_model):
    seen: list[list] = []

    async def model(messages, info):
        seen.append(list(messages))
        yield f"Answer {len(seen)}."

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model))
    first = send(app, client, conversation_id, "What is the capital of France?")
    second = send(app, client, conversation_id, "And of Italy?")
    assert outcome(app, first)[0].status == outcome(app, second)[0].status == "succeeded"

    second_turn = seen[1]
    prompts = [p.content for m in second_turn if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, UserPromptPart)]
    answers = [p.content for m in second_turn if isinstance(m, ModelResponse) for p in m.parts
               if isinstance(p, TextPart)]
    assert prompts == ["What is the capital of France?", "And of Italy?"]
    assert answers == ["Answer 1."]
    with app.app_context():
        stored = db.session.get(Conversation, conversation_id).model_context
    history = ModelMessagesTypeAdapter.validate_json(stored)
    assert ModelMessagesTypeAdapter.dump_json(history).decode() == stored  # round-trips exactly
    assert [p.content for m in history if isinstance(m, ModelResponse) for p in m.parts] == \
        ["Answer 1.", "Answer 2."]


def test_transcript_and_usage_are_stored_per_message(app, client, auth, scripted_model):
    auth.login_as("user")
    model = chat_model(scripted_model, words("Hi ", "there"))
    conversation_id = start_chat(app, client, model_config_id=model)
    run_id = send(app, client, conversation_id, "Hello")
    run, message = outcome(app, run_id)
    assert message.content == "Hi there" and message.meta["status"] == "succeeded"
    assert run.requests == 1 and run.input_tokens > 0 and run.output_tokens > 0
    assert (message.input_tokens, message.output_tokens) == (run.input_tokens, run.output_tokens)
    page = client.get(f"/chat/{conversation_id}").text
    assert "Hello" in page and "Hi there" in page and "tokens" in page


def test_the_demo_agent_on_the_offline_model_calls_the_clock_and_reports_it(app, client, auth):
    auth.login_as("user")
    with app.app_context():
        from app.models import Agent

        demo = db.session.scalar(db.select(Agent).where(Agent.name == "Demo assistant"))
        demo_id = demo.id
    conversation_id = start_chat(app, client, demo_id)
    run_id = send(app, client, conversation_id, "What is the current time?")
    run, message = outcome(app, run_id)
    assert run.status == "succeeded"
    (step,) = message.steps
    assert step["name"] == "current_time" and not step["failed"]
    assert step["result"] in message.content  # reported faithfully
    assert "Offline model" in message.content


# --- tools ----------------------------------------------------------------------------------------

def explode_skill() -> Skill:
    from pydantic import BaseModel, ConfigDict

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")

    def build(config, ctx):
        toolset = FunctionToolset()

        @toolset.tool_plain
        def explode() -> str:
            """Blow up."""
            raise RuntimeError("the fuse was lit")

        return toolset

    return Skill(name="exploder", title="Exploder", config=Config, build=build)


def test_a_tools_exception_becomes_a_tool_result_and_the_run_finishes(app, client, auth, scripted_model):
    app.extensions["skills"]["exploder"] = explode_skill()
    results: list = []

    async def model(messages, info):
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            yield {0: DeltaToolCall(name="explode", json_args="{}", tool_call_id="call-1")}
            return
        results.extend(returns)
        yield f"The tool said: {returns[0].model_response_str()}"

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model),
                                 skills=[{"name": "exploder", "config": {}}])
    run, message = outcome(app, send(app, client, conversation_id, "Explode"))
    assert run.status == "succeeded"
    (result,) = results
    assert result.outcome == "failed" and "RuntimeError: the fuse was lit" in result.model_response_str()
    (step,) = message.steps
    assert step["failed"] is True and "the fuse was lit" in step["result"]
    assert "the fuse was lit" in message.content


# --- failures -------------------------------------------------------------------------------------

def test_a_provider_error_fails_the_run_and_keeps_the_message(app, client, auth, scripted_model):
    async def model(messages, info):
        body = {"error": {"message": "Incorrect API key provided: sk-***", "type": "invalid_request_error"}}
        raise ModelHTTPError(401, "gpt-test", body=body)
        yield ""  # pragma: no cover - makes this an async generator

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model))
    run_id = send(app, client, conversation_id, "Hello there")
    run, message = outcome(app, run_id)
    reason = "The provider answered 401: Incorrect API key provided: sk-***"
    assert run.status == "failed" and run.error == reason
    assert message.meta == {"status": "failed", "error": reason}
    with app.app_context():
        user_messages = db.session.scalars(db.select(Message.content).where(
            Message.conversation_id == conversation_id, Message.role == "user")).all()
    assert user_messages == ["Hello there"]
    page = client.get(f"/chat/{conversation_id}").text
    assert "Hello there" in page and "The run failed." in page and reason in page
    # The user can try again: the failed turn does not block the conversation.
    assert outcome(app, send(app, client, conversation_id, "Again"))[0].status == "failed"


def test_a_missing_agent_fails_the_run_honestly(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words("x")))
    with app.app_context():
        conversation = db.session.get(Conversation, conversation_id)
        run = Run(conversation_id=conversation_id, user_id=conversation.user_id, agent_id=None, prompt="Hi")
        db.session.add(run)
        db.session.commit()
        run_id = run.id
    execution.launch(app, run_id).result(10)
    run, message = outcome(app, run_id)
    assert run.status == "failed" and "no longer exists" in run.error


def test_a_run_left_running_by_a_crash_is_marked_interrupted(app, runner, auth, scripted_model):
    user_id = auth.create("user")
    with app.app_context():
        agent = make_agent()
        conversation = Conversation(user_id=user_id, agent_id=agent.id)
        db.session.add(conversation)
        db.session.flush()
        run = Run(conversation_id=conversation.id, user_id=user_id, agent_id=agent.id, prompt="Hi",
                  status="running")
        db.session.add(run)
        db.session.commit()
        run_id = run.id
    result = runner.invoke(args=["recover-runs"])
    assert result.exit_code == 0 and "Marked 1 unfinished run(s) as interrupted." in result.output
    run, message = outcome(app, run_id)
    assert run.status == "interrupted" and message.meta["status"] == "interrupted"
    assert "The server stopped" in message.meta["error"]


# --- Stop and the cap -----------------------------------------------------------------------------

def slow_stream(started: threading.Event):
    """A model that writes its first words, then hangs until the run is stopped (however busy the machine)."""
    async def model(messages, info):
        yield "Partial answer"
        started.set()
        await asyncio.Event().wait()  # never set: only the Stop's cancellation ends the stream
        yield "never said"

    return model


def test_stop_keeps_the_partial_output(app, client, auth, scripted_model):
    started = threading.Event()
    auth.login_as("user")
    model = chat_model(scripted_model, slow_stream(started))
    conversation_id = start_chat(app, client, model_config_id=model)
    run_id = send(app, client, conversation_id, "Write a long essay", wait=False)
    assert started.wait(60)
    response = client.post(f"/runs/{run_id}/stop")
    assert response.status_code == 204
    execution.wait(run_id)
    run, message = outcome(app, run_id)
    assert run.status == "cancelled"
    assert message.content == "Partial answer"
    assert message.meta["status"] == "cancelled"
    with app.app_context():
        context = db.session.get(Conversation, conversation_id).model_context
    assert "Partial answer" in context  # the partial response is kept in the model context too
    page = client.get(f"/chat/{conversation_id}").text
    assert "Stopped. What was produced before Stop is kept above." in page
    # Stopping a run that has ended changes nothing.
    assert client.post(f"/runs/{run_id}/stop").status_code == 204
    assert outcome(app, run_id)[0].status == "cancelled"


def test_stop_from_another_process_is_noticed(app, client, auth, scripted_model):
    """Only the database flag is set (as a Stop served by another worker would); the run notices."""
    started = threading.Event()
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=scripted_model(
        stream_function=slow_stream(started)))
    run_id = send(app, client, conversation_id, "Go", wait=False)
    assert started.wait(60)
    with app.app_context():
        db.session.execute(db.update(Run).where(Run.id == run_id).values(cancel_requested=True))
        db.session.commit()
    execution.wait(run_id)
    assert outcome(app, run_id)[0].status == "cancelled"


def test_the_request_cap_leaves_the_turn_unfinished(app, client, auth, scripted_model):
    calls = []

    async def model(messages, info):
        calls.append(1)
        yield {0: DeltaToolCall(name="current_time", json_args="{}", tool_call_id=f"call-{len(calls)}")}

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model),
                                 skills=[{"name": "clock", "config": {}}], max_requests=3)
    run, message = outcome(app, send(app, client, conversation_id, "Time, forever"))
    assert run.status == "unfinished" and len(calls) == 3
    assert "3 model requests" in run.error
    assert len(message.steps) == 3 and all(step["result"] for step in message.steps)  # tool results kept
    assert "Unfinished." in client.get(f"/chat/{conversation_id}").text


# --- events ---------------------------------------------------------------------------------------

def test_events_are_numbered_and_end_with_the_message(app, client, auth, scripted_model):
    async def model(messages, info):
        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield {0: DeltaToolCall(name="current_time", json_args="{}", tool_call_id="t1")}
            return
        yield "It is "
        yield "now."

    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model),
                                 skills=[{"name": "clock", "config": {}}])
    run_id = send(app, client, conversation_id, "time?")
    with app.app_context():
        stored = db.session.scalars(db.select(RunEvent).where(RunEvent.run_id == run_id)
                                    .order_by(RunEvent.seq)).all()
        kinds = [e.type for e in stored]
        assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
        assert kinds[-1] == "end" and kinds.count("end") == 1
        assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("text")
        assert "".join(e.data["delta"] for e in stored if e.type == "text") == "It is now."
        end = stored[-1].data
        message = db.session.get(Message, end["message_id"])
        assert end["status"] == "succeeded" and message.content == "It is now."


@pytest.mark.parametrize("body", [{"error": {"message": "Bad key"}}, "Bad key", None])
def test_provider_error_messages_say_what_the_provider_answered(body):
    error = ModelHTTPError(401, "m", body=body)
    text = failures.provider_error(error)
    assert text.startswith("The provider answered 401: ")
    assert ("Bad key" in text) if body else len(text) > len("The provider answered 401: ")
    if isinstance(body, dict):
        assert json.dumps(body) not in text
