"""Answer checks in real runs (scripted model): the answer is asked again when it claims what this turn's
tool results do not support, prints a tool call, blames a mode or hands the work back; fail open otherwise."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import UserPromptPart

from app.policy.claims import claims_change, claims_mode_limit, hands_off, prints_tool_call
from tests.chat_driver import outcome, send, start_chat
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted
from tests.skills.discipline_skills import MODES, installed, skill_entries


def asked_again(script: Script) -> list[str]:
    """The output retries the model was sent (pydantic-ai shows them to a model as fenced feedback)."""
    return [str(part.content) for messages in script.seen for part in messages[-1].parts
            if isinstance(part, UserPromptPart) and "retry_feedback" in str(part.content)]


def converse(app, client, scripted_model, script, *texts, extra=()):
    with installed(app):
        with app.app_context():
            agent_id = make_agent(skills=skill_entries({"name": "answer_checks", "config": {}}, *extra),
                                  model_config_id=scripted(scripted_model, script)).id
        conversation_id = start_chat(app, client, agent_id)
        results = [outcome(app, send(app, client, conversation_id, text)) for text in texts or ("Go",)]
    return results[-1]


@pytest.fixture
def user(auth):
    auth.login_as("user")


def test_a_supported_claim_passes_at_once(app, client, user, scripted_model):
    script = Script([("add_rows", {"table": "Contacts", "count": 3})], "I have added 3 rows to Contacts.")
    run, message = converse(app, client, scripted_model, script)
    assert run.status == "succeeded" and message.content == "I have added 3 rows to Contacts."
    assert asked_again(script) == []


def test_an_unsupported_claim_is_asked_again_and_only_the_checked_answer_is_shown(app, client, user, scripted_model):
    script = Script("I have created the table Contacts.", "Nothing was changed yet: shall I create it?")
    _run, message = converse(app, client, scripted_model, script)
    assert len(asked_again(script)) == 1 and "no tool result" in asked_again(script)[0]
    assert message.content == "Nothing was changed yet: shall I create it?"  # the rejected attempt is not shown


def test_italian_claims_are_checked(app, client, user, scripted_model):
    script = Script("Ho creato la tabella Contatti.", "Non ho ancora modificato nulla.")
    _run, message = converse(app, client, scripted_model, script)
    assert len(asked_again(script)) == 1


def test_a_prior_success_does_not_support_a_new_claim(app, client, user, scripted_model):
    script = Script([("add_rows", {"table": "Contacts", "count": 1})], "I have added a row.",
                    "I have added another row.", "I did not add anything this time.")
    converse(app, client, scripted_model, script, "Add a row", "Add another",
             extra=({"name": "action_memory", "config": {}},))
    assert len(asked_again(script)) == 1  # the second turn's claim: its only evidence was the first turn's


@pytest.mark.parametrize("call", [("reuse_table", {"name": "Contacts"}), ("add_rows", {"table": "C", "count": 0})],
                         ids=["reused", "no-op"])
def test_a_reused_resource_or_a_no_op_supports_no_change_claim(app, client, user, scripted_model, call):
    script = Script([call], "I have created it.", "Contacts already existed; nothing changed.")
    _run, message = converse(app, client, scripted_model, script)
    assert len(asked_again(script)) == 1 and message.content.startswith("Contacts already existed")


def test_a_routing_only_result_supports_no_claim(app, client, user, scripted_model):
    script = Script([("search_tools", {"queries": ["trigger"]})], [("create_trigger", {"name": "Nightly"})],
                    "I have created the trigger.", "The trigger is not created yet.")
    converse(app, client, scripted_model, script, extra=({"name": "tool_routing", "config": MODES},))
    assert len(asked_again(script)) == 1


def test_a_partial_result_supports_an_answer_that_says_what_is_unfinished(app, client, user, scripted_model):
    script = Script([("import_rows", {"table": "Contacts", "count": 5})], "I have imported the rows.",
                    "I have imported 2 rows; 3 rows are remaining.")
    _run, message = converse(app, client, scripted_model, script)
    assert len(asked_again(script)) == 1 and "unfinished" in asked_again(script)[0]
    assert message.content == "I have imported 2 rows; 3 rows are remaining."


def test_a_printed_tool_call_is_asked_again(app, client, user, scripted_model):
    script = Script('add_rows({"table": "Contacts", "count": 1})', "Which table?")
    converse(app, client, scripted_model, script)
    assert "prints a tool call" in asked_again(script)[0]


def test_a_false_mode_limitation_is_asked_again(app, client, user, scripted_model):
    script = Script("I can't create triggers in the current mode.", "Which schedule?")
    converse(app, client, scripted_model, script)
    assert "Modes only decide" in asked_again(script)[0]


def test_an_unnecessary_handoff_is_asked_again_but_not_after_a_failure(app, client, user, scripted_model):
    script = Script("You can add the rows yourself from the table page.", "How many rows?")
    converse(app, client, scripted_model, script)
    assert "hands the work back" in asked_again(script)[0]
    failing = Script([("add_rows", {"table": "C", "count": -1})], "That failed; you can add them manually.")
    _run, message = converse(app, client, scripted_model, failing)
    assert asked_again(failing) == [] and message.content.endswith("manually.")


def test_ambiguous_descriptions_fail_open(app, client, user, scripted_model):
    script = Script("Updated cells highlight briefly, and created rows appear at the top.")
    _run, message = converse(app, client, scripted_model, script)
    assert asked_again(script) == [] and message.content.startswith("Updated cells")


def test_when_retries_run_out_the_answer_says_it_is_unfinished(app, client, user, scripted_model):
    script = Script([("reuse_table", {"name": "Contacts"})], "I have created the table.", "I have created it, done!",
                    "I have created it.")
    run, message = converse(app, client, scripted_model, script)
    assert run.status == "succeeded"
    assert message.content.startswith("This answer is unfinished") and "reuse_table: reused" in message.content
    assert message.meta["answer_check"]["unfinished"] is True
    assert [step["name"] for step in message.steps] == ["reuse_table"]  # the turn's tool results are kept


def test_claim_patterns():
    assert claims_change("I've deleted the row.") and claims_change("La tabella è stata creata.")
    assert not claims_change("Updated cells highlight briefly.") and not claims_change("Shall I create it?")
    assert not claims_change("Nothing was changed.") and not claims_change("Non ho creato nulla.")
    assert claims_change("I have created the table. Nothing else is needed.")
    assert claims_mode_limit("Non posso farlo in questa modalità.")
    assert not claims_mode_limit("I cannot see that table: you have no access to it.")
    assert hands_off("Puoi aggiungerla manualmente.") and not hands_off("I added it for you.")
    assert prints_tool_call("<tool_call>{}</tool_call>", []) and not prints_tool_call("add rows to it", ["add_rows"])
