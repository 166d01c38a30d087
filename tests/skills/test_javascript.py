"""The JavaScript function skill in real agent runs: declared arguments, results, and the sandbox's walls."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from app.skills.javascript import Config
from tests.skill_chat import Script, chat, scripted

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


def said(step: dict) -> str:
    """Return what a tool step returned; a failed result is stored as {"error": "..."}."""
    return json.loads(step["result"])["error"] if step["failed"] else step["result"]


def test_the_admins_function_is_a_tool_with_their_name_description_and_arguments(
        app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script([("add_tax", {"amount": 100}), ("add_tax", {"amount": 100, "rate": 0.07})])

    run, message = chat(app, client, "javascript", ADD_TAX, model_id=scripted(scripted_model, script))

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

    _run, message = chat(app, client, "javascript", ADD_TAX, model_id=scripted(scripted_model, script))

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

    _run, message = chat(app, client, "javascript", settings,
                         model_id=scripted(scripted_model, Script([("probe", {})])))

    [step] = message.steps
    assert not step["failed"], step
    assert json.loads(step["result"]) == {"kinds": ["undefined"] * len(names),
                                          "imported": "Error: Not supported"}


# The memory case's time limit is the most a skill allows, so that on a busy machine the memory limit is
# what stops it (filling 16 MB takes longer when the cores are shared, never 30 s).
@pytest.mark.parametrize(("code", "seconds", "limit"), [
    ("while (true) {}", 0.5, "hit its time limit: JavaScript ran longer than 0.5 s"),
    ("const a = []; while (true) a.push('x'.repeat(1000) + a.length);", 30,
     "hit its memory limit: JavaScript used more than 16777216 bytes"),
], ids=["time", "memory"])
def test_javascript_cannot_use_more_time_or_memory_than_configured(app, client, auth, scripted_model,
                                                                   code, seconds, limit):
    auth.login_as("user")
    settings = {"name": "hog", "description": "Use resources.", "arguments": [], "code": code,
                "timeout_seconds": seconds, "max_memory_mb": 16}

    run, message = chat(app, client, "javascript", settings, model_id=scripted(scripted_model, Script([("hog", {})])))

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["failed"] and said(step).startswith(f"hog {limit}")


def test_a_thrown_error_is_a_failed_result_with_its_line(app, client, auth, scripted_model):
    auth.login_as("user")
    code = "if (amount < 0)\n  throw new RangeError('amount must not be negative');\nreturn 1;"
    settings = {**ADD_TAX, "code": code}

    _run, message = chat(app, client, "javascript", settings,
                         model_id=scripted(scripted_model, Script([("add_tax", {"amount": -5})])))

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
