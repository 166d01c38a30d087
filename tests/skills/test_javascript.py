"""The JavaScript function skill in real agent runs: declared arguments, results, and the sandbox's walls."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall

from app.agents import runtime
from app.extensions import db
from app.models import Message, Run
from app.skills.javascript import Config
from tests.conftest import make_agent

ADD_TAX = {
    "name": "add_tax",
    "description": "Add sales tax to an amount.",
    "arguments": [
        {"name": "amount", "type": "number", "description": "The amount before tax."},
        {"name": "rate", "type": "number", "description": "The tax rate, 0.2 when omitted.",
         "required": False},
    ],
    "code": "console.log('rate', rate);\nreturn Math.round(amount * (1 + (rate ?? 0.2)) * 100) / 100;",
}


class Script:
    """A scripted model: each step is a list of tool calls; then it answers with what the tools returned."""

    def __init__(self, *steps: list[tuple[str, dict]]) -> None:
        self.steps, self.infos = list(steps), []

    def respond(self, messages, info) -> ModelResponse:
        if info.output_tools and not info.allow_text_output:  # the title job after the first answer
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Scripted"})])
        self.infos.append(info)
        if len(self.infos) <= len(self.steps):
            calls = self.steps[len(self.infos) - 1]
            return ModelResponse(parts=[ToolCallPart(name, args, f"call-{len(self.infos)}-{index}")
                                        for index, (name, args) in enumerate(calls)])
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returned) or "Done")])

    async def stream(self, messages, info):
        for index, part in enumerate(self.respond(messages, info).parts):
            if isinstance(part, TextPart):
                yield part.content
            else:
                yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                            tool_call_id=part.tool_call_id)}


def chat(app, client, scripted_model, script: Script, settings: dict) -> tuple[Run, Message]:
    """Make an agent with the skill, chat with it over HTTP, wait for the run; return what it stored."""
    model_id = scripted_model(function=script.respond, stream_function=script.stream)
    with app.app_context():
        agent_id = make_agent("Calculator", skills=[{"name": "javascript", "config": settings}],
                              model_config_id=model_id).id
    conversation = client.post("/chat/", data={"agent_id": agent_id}).location.rstrip("/").rsplit("/", 1)[-1]
    assert client.post(f"/chat/{conversation}/messages", data={"text": "Go"}).status_code == 302
    with app.app_context():
        run_id = db.session.scalar(db.select(Run.id).where(Run.conversation_id == int(conversation)))
    runtime.wait(run_id)
    with app.app_context():
        run = db.session.get(Run, run_id)
        message = db.session.scalar(db.select(Message).where(Message.run_id == run_id,
                                                             Message.role == "assistant"))
        db.session.expunge_all()
    return run, message


def said(step: dict) -> str:
    """Return what a tool step returned; a failed result is stored as {"error": "..."}."""
    return json.loads(step["result"])["error"] if step["failed"] else step["result"]


def test_the_admins_function_is_a_tool_with_their_name_description_and_arguments(
        app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script([("add_tax", {"amount": 100}), ("add_tax", {"amount": 100, "rate": 0.07})])

    run, message = chat(app, client, scripted_model, script, ADD_TAX)

    assert run.status == "succeeded", run.error
    [tool] = script.infos[0].function_tools
    assert (tool.name, tool.description) == ("add_tax", "Add sales tax to an amount.")
    assert tool.parameters_json_schema == {
        "type": "object",
        "properties": {"amount": {"type": "number", "description": "The amount before tax."},
                       "rate": {"type": "number", "description": "The tax rate, 0.2 when omitted."}},
        "required": ["amount"],
        "additionalProperties": False,
    }
    default_rate, given_rate = message.steps
    assert json.loads(default_rate["result"]) == {"result": 120, "console": ["rate undefined"]}
    assert json.loads(given_rate["result"]) == {"result": 107, "console": ["rate 0.07"]}


def test_arguments_that_do_not_fit_the_declaration_are_sent_back(app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script([("add_tax", {"amount": "ten", "discount": 3})])

    _run, message = chat(app, client, scripted_model, script, ADD_TAX)

    [step] = message.steps
    assert step["failed"]
    assert "The arguments do not fit add_tax:" in step["result"] and "'ten' is not of type 'number'" in (
        step["result"])


def test_javascript_cannot_reach_modules_files_or_the_network(app, client, auth, scripted_model):
    auth.login_as("user")
    names = ["require", "process", "fetch", "XMLHttpRequest", "WebSocket", "WebAssembly", "Deno", "Bun"]
    settings = {
        "name": "probe", "description": "Probe the sandbox.", "arguments": [],
        "code": f"const kinds = {json.dumps(names)}.map((n) => typeof globalThis[n]);\n"
                "let imported;\n"
                "try { await import('fs'); imported = 'yes'; } catch (e) { imported = String(e); }\n"
                "return {kinds, imported};",
    }

    _run, message = chat(app, client, scripted_model, Script([("probe", {})]), settings)

    [step] = message.steps
    assert not step["failed"], step
    assert json.loads(step["result"]) == {"kinds": ["undefined"] * len(names),
                                          "imported": "Error: Not supported"}


@pytest.mark.parametrize(("code", "limit"), [
    ("while (true) {}", "hit its time limit: JavaScript ran longer than 0.5 s"),
    ("const a = []; while (true) a.push('x'.repeat(1000) + a.length);",
     "hit its memory limit: JavaScript used more than 16777216 bytes"),
], ids=["time", "memory"])
def test_javascript_cannot_use_more_time_or_memory_than_configured(app, client, auth, scripted_model,
                                                                   code, limit):
    auth.login_as("user")
    settings = {"name": "hog", "description": "Use resources.", "arguments": [], "code": code,
                "timeout_seconds": 0.5, "max_memory_mb": 16}

    run, message = chat(app, client, scripted_model, Script([("hog", {})]), settings)

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["failed"] and said(step).startswith(f"hog {limit}")


def test_a_thrown_error_is_a_failed_result_with_its_line(app, client, auth, scripted_model):
    auth.login_as("user")
    code = "if (amount < 0)\n  throw new RangeError('amount must not be negative');\nreturn 1;"
    settings = {**ADD_TAX, "code": code}

    _run, message = chat(app, client, scripted_model, Script([("add_tax", {"amount": -5})]), settings)

    [step] = message.steps
    assert said(step) == "add_tax failed: RangeError: amount must not be negative (line 2)"


def test_settings_check_names_and_arguments():
    with pytest.raises(ValidationError, match="reserved word"):
        Config(arguments=[{"name": "class"}])
    with pytest.raises(ValidationError, match="repeated: x"):
        Config(arguments=[{"name": "x"}, {"name": "x", "type": "number"}])
    with pytest.raises(ValidationError):
        Config(name="add tax")
    with pytest.raises(ValidationError):
        Config(arguments=[{"name": "x", "type": "date"}])
    assert Config().arguments[0].name == "text"  # the example the admin form starts from
