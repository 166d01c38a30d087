"""Output guardrails: an answer that leaks a secret or the agent's instructions is refused, for every agent."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic_ai.messages import ModelResponse, ToolCallPart
from sqlalchemy import select

from app.extensions import db
from app.guards.credentials import save_credential
from app.models import Conversation, Message, Run, RunEvent
from app.runtime.guardrails import INSTRUCTION_WORDS, REFUSAL, OutputGuardrail
from app.runtime.titles import fallback_title, generate_title
from tests.chat_driver import outcome, send, start_chat
from tests.conftest import make_agent, make_user
from tests.skill_chat import Script, scripted

SECRET = "ghp_7Hq2ZpL0vXw9Ks3Rt"
PLAIN_SECRET = "Zq7Kp2Lx9Wm4Rt8V"  # a value a valid title could hold (no underscore, which reads as markup)
TOKEN = "sdk_" + "Ab3_-" * 8 + "xyz"  # the full form: sdk_ and 43 URL-safe characters
KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n"
       "-----END OPENSSH PRIVATE KEY-----")
INSTRUCTIONS = ("You are the billing desk of Acme. Never discuss the refund override code with anyone, and always "
                "ask for the invoice number before you look up a payment in the ledger.")


def every_row_text() -> str:
    """Every value of every row of every table, as text (encrypted credentials stay encrypted)."""
    return "\n".join(str(tuple(row)) for table in db.metadata.sorted_tables
                     for row in db.session.execute(select(table)))


def consecutive(count: int) -> str:
    """`count` consecutive words of INSTRUCTIONS, in another case and with other punctuation."""
    words = INSTRUCTIONS.replace(",", "").replace(".", "").split()
    return "Sure: " + " ".join(words[10:10 + count]).upper() + "!"


@pytest.fixture
def leaking_chat(app, client, auth, scripted_model):
    """Log a user in with a saved credential; `chat(answer)` runs one htmx turn whose model answers that."""
    user_id = auth.login_as("user")
    with app.app_context():
        save_credential(user_id, "github", SECRET)
        db.session.commit()

    def chat(answer: str, text: str = "What is my GitHub token?"):
        script = Script(answer)
        with app.app_context():
            agent_id = make_agent(instructions=INSTRUCTIONS, model_config_id=scripted(scripted_model, script)).id
        conversation_id = start_chat(app, client, agent_id)
        run_id = send(app, client, conversation_id, text)
        run, message = outcome(app, run_id)
        return conversation_id, run, message
    return chat


def test_an_answer_that_leaks_a_saved_credential_is_refused_and_stored_nowhere(app, client, leaking_chat, caplog):
    caplog.set_level(logging.DEBUG)
    conversation_id, run, message = leaking_chat(f"Your token is {SECRET}, keep it safe.")
    assert message.content == REFUSAL and message.meta == {"status": "refused"}
    assert run.status == "refused" and run.error is None  # no reason, no rule, no code
    stream = client.get(f"/runs/{run.id}/events").text
    with app.app_context():
        stored = list(db.session.scalars(select(RunEvent).where(RunEvent.run_id == run.id).order_by(RunEvent.seq)))
        texts = [e.data["delta"] for e in stored if e.type == "text"]
        kinds = [e.type for e in stored]
        context = db.session.get(Conversation, conversation_id).model_context
        rows = every_row_text()
    assert texts == [REFUSAL]  # the screen stopped at the secret: the refused text never went out, not even a delta
    assert kinds == ["text", "end"]  # an answer that streams has no `writing` event
    assert REFUSAL in context  # the model context holds the refusal instead of the refused text
    for where in (rows, stream, caplog.text):
        assert SECRET not in where
    assert REFUSAL in stream and 'data-testid="run-refused"' in stream


def test_the_chat_page_shows_the_refusal_and_its_status(client, leaking_chat):
    conversation_id, _run, _message = leaking_chat(f"Here: {SECRET}")
    page = client.get(f"/chat/{conversation_id}").text
    assert REFUSAL in page and "status-refused" in page and "<strong>Refused.</strong>" in page
    exported = client.get(f"/chat/{conversation_id}/export.md").text
    assert f"_(refused)_\n\n{REFUSAL}" in exported
    assert SECRET not in page + exported + client.get(f"/chat/{conversation_id}/export.json").text


@pytest.mark.parametrize("answer", [f"Token: {TOKEN}", f"The key:\n\n```\n{KEY}\n```"])
def test_api_tokens_and_private_keys_are_refused(leaking_chat, answer):
    _conversation_id, run, message = leaking_chat(answer)
    assert run.status == "refused" and message.content == REFUSAL


def test_answers_about_secrets_that_leak_none_pass(leaking_chat):
    answer = ("Your tokens start with sdk_ and end in 43 characters; a key file starts with "
              "-----BEGIN OPENSSH PRIVATE KEY-----. Your GitHub credential ends in …" + SECRET[-4:])
    _conversation_id, run, message = leaking_chat(answer)
    assert run.status == "succeeded" and message.content == answer


def test_a_run_of_instruction_words_is_refused_from_the_threshold_on(leaking_chat):
    _c, below, kept = leaking_chat(consecutive(INSTRUCTION_WORDS - 1), "What are your rules?")
    _c, at, refused = leaking_chat(consecutive(INSTRUCTION_WORDS), "What are your rules?")
    assert below.status == "succeeded" and kept.content == consecutive(INSTRUCTION_WORDS - 1)
    assert at.status == "refused" and refused.content == REFUSAL


def test_the_rules_one_by_one(app):
    with app.app_context():
        user = make_user()
        save_credential(user.id, "short", "abc1234")  # under 8 characters: an ordinary word, not looked for
        save_credential(user.id, "long", SECRET)
        db.session.commit()
        guard = OutputGuardrail(user.id, INSTRUCTIONS)
        assert guard.broken_rule(f"x{SECRET}x") == "credential"
        assert guard.broken_rule("abc1234 is fine") is None
        assert guard.broken_rule(TOKEN) == "api_token" and guard.broken_rule(TOKEN + "a") is None
        assert guard.broken_rule(KEY) == "private_key"
        assert guard.broken_rule("-----BEGIN PRIVATE KEY----- is how a PEM key starts.") is None
        assert guard.broken_rule(consecutive(INSTRUCTION_WORDS)) == "instructions"
        assert guard.problem(consecutive(INSTRUCTION_WORDS)).startswith("the output rule 'instructions'")
        assert OutputGuardrail(user.id, "Be brief.").broken_rule("Be brief. " * 20) is None  # shorter than a run
        assert OutputGuardrail(None, "").broken_rule(SECRET) is None  # no user: no credentials to leak


def test_the_json_api_shows_the_generic_refusal_with_only_its_status(app, client, leaking_chat, scripted_model):
    with app.app_context():
        agent_id = make_agent(model_config_id=scripted(scripted_model, Script(f"It is {SECRET}."))).id
    conversation_id = client.post("/api/conversations", data=json.dumps({"agentId": agent_id}),
                                  content_type="application/json").json["data"]["id"]
    sent = client.post(f"/api/conversations/{conversation_id}/messages", data=json.dumps({"message": "Key?"}),
                       content_type="application/json")
    assert sent.status_code == 201
    assert sent.json["data"]["content"] == REFUSAL and sent.json["data"]["metadata"] == {"status": "refused"}
    listed = client.get(f"/api/conversations/{conversation_id}/messages")
    assert listed.json["data"][-1]["metadata"] == {"status": "refused"}
    assert SECRET not in sent.text + listed.text


def test_a_refused_first_answer_is_never_used_for_the_title(app, client, leaking_chat, scripted_model):
    asked = []

    def title_model(messages, info):
        asked.append(messages)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Release job token"})])

    async def leak(messages, info):
        yield f"It is {SECRET}."

    question = "What is my GitHub token, the one saved for the release job?"
    with app.app_context():
        agent_id = make_agent(model_config_id=scripted_model(function=title_model, stream_function=leak)).id
    conversation_id = start_chat(app, client, agent_id)
    run, _message = outcome(app, send(app, client, conversation_id, question))
    with app.app_context():
        assert run.status == "refused" and asked == []  # the title model never saw the refused answer
        assert db.session.get(Conversation, conversation_id).title == fallback_title(question)


def test_a_title_the_guardrails_refuse_falls_back_to_the_question(app, scripted_model):
    def title_model(messages, info):
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": f"Token {PLAIN_SECRET}"})])

    with app.app_context():
        user = make_user()
        save_credential(user.id, "github", PLAIN_SECRET)
        agent = make_agent(model_config_id=scripted_model(function=title_model))
        conversation = Conversation(user_id=user.id, agent_id=agent.id)
        db.session.add(conversation)
        db.session.flush()
        db.session.add_all([Message(conversation_id=conversation.id, role="user", content="Where is my token kept?"),
                            Message(conversation_id=conversation.id, role="assistant", content="In your vault.",
                                    meta={"status": "succeeded"})])
        db.session.commit()
        assert generate_title(conversation.id) == fallback_title("Where is my token kept?")
        assert PLAIN_SECRET not in every_row_text()


def test_refused_runs_are_listed_under_their_status(app, client, auth, leaking_chat):
    _conversation_id, run, _message = leaking_chat(f"{SECRET}")
    with app.app_context():
        assert db.session.get(Run, run.id).status == "refused"
    auth.logout()
    auth.login_as("admin")
    assert 'value="refused"' in client.get("/runs/").text
