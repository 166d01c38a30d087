"""Conversation titles: every rule of the title job, the fallback, the log, and the sidebar update."""

from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall

from app.extensions import db
from app.models import Conversation, Message
from app.runtime import execution
from app.runtime.titles import GeneratedTitle, fallback_title, generate_title
from tests.chat_driver import outcome, send, start_chat
from tests.conftest import make_agent, make_user

QUESTION = "How do I rotate the API keys of our staging cluster without downtime?"
ANSWER = "Create the new key, deploy it next to the old one, then revoke the old key."


class TitleScript:
    """A title model that answers the given titles in turn and records what it was asked."""

    def __init__(self, *titles: str | Exception) -> None:
        self.titles = list(titles)
        self.calls: list = []

    def __call__(self, messages, info):
        self.calls.append((list(messages), info))
        title = self.titles[min(len(self.calls), len(self.titles)) - 1]
        if isinstance(title, Exception):
            raise title
        if title.startswith("TEXT:"):
            return ModelResponse(parts=[TextPart(title[5:])])
        (tool,) = info.output_tools
        return ModelResponse(parts=[ToolCallPart(tool.name, {"title": title}, f"title-{len(self.calls)}")])

    def prompts(self, index: int = 0) -> list[str]:
        messages, _info = self.calls[index]
        return [p.content for m in messages for p in getattr(m, "parts", []) if isinstance(p, UserPromptPart)]


def conversation_with(app, model_config_id: int, turns: list[tuple[str, str]],
                      title: str | None = None) -> int:
    with app.app_context():
        user = make_user()
        agent = make_agent(model_config_id=model_config_id)
        conversation = Conversation(user_id=user.id, agent_id=agent.id, title=title)
        db.session.add(conversation)
        db.session.flush()
        for question, answer in turns:
            db.session.add(Message(conversation_id=conversation.id, role="user", content=question))
            db.session.add(Message(conversation_id=conversation.id, role="assistant", content=answer,
                                   meta={"status": "succeeded"}))
        db.session.commit()
        return conversation.id


def title_of(app, conversation_id: int) -> str | None:
    with app.app_context():
        return db.session.get(Conversation, conversation_id).title


def run_title_job(app, conversation_id: int) -> str | None:
    with app.app_context():
        return generate_title(conversation_id)


# --- the rules ------------------------------------------------------------------------------------

@pytest.mark.parametrize("title", ["Rotating staging API keys", "Key rotation", "A b c d e",
                                   "x" * 19 + " " + "y" * 20, "Prix du café à Paris"])
def test_titles_that_pass(title):
    assert GeneratedTitle(title=title).title == title


@pytest.mark.parametrize(("title", "problem"), [
    ("Keys", "use 2 to 5 words (this has 1)"),
    ("One two three four five six", "use 2 to 5 words (this has 6)"),
    ("Rotating the staging cluster API keys now", "use at most 40 characters"),
    ('"Rotating keys"', "do not use quotes"),
    ("Rotating ‘keys’", "do not use quotes"),
    ("**Rotating** keys", "do not use markdown"),
    ("# Rotating keys", "do not use markdown"),
    ("Rotating `keys`", "do not use quotes"),
    ("Rotating\nkeys", "do not break the line"),
    ("Rotating keys.", "do not end with punctuation"),
    ("Rotating keys?", "do not end with punctuation"),
    ("Rotating keys!", "do not end with punctuation"),
    ("Rotating keys ---", "do not end with punctuation"),
    ("Rotating keys —", "do not end with punctuation"),
    ("1. Rotating keys", "do not use markdown"),
    ("> Rotating keys", "do not use markdown"),
])
def test_titles_that_fail_say_what_was_wrong(title, problem):
    with pytest.raises(ValidationError) as caught:
        GeneratedTitle(title=title)
    assert problem in str(caught.value)


@pytest.mark.parametrize(("question", "expected"), [
    (QUESTION, "How do I rotate the API keys of our"),
    ("Short question?", "Short question"),
    ("  spaced\n\nout   words here ", "spaced out words here"),
    ("Supercalifragilisticexpialidocious-and-more-words-glued", "Supercalifragilisticexpialidocious-and-m"),
    ("**Plan** the `release` of [v2](https://example.org)", "Plan the release of v2"),
    ("# Deploy steps\n\n---\n\n- build\n- ship", "Deploy steps build ship"),
    ("Keys ---", "Keys"),
    ("---", "New chat"),
])
def test_fallback_is_the_first_words_cut_at_a_word_boundary(question, expected):
    title = fallback_title(question)
    assert title == expected and len(title) <= 40


def test_a_valid_title_is_written_with_the_title_profile(app, scripted_model):
    script = TitleScript("Rotating staging API keys")
    conversation_id = conversation_with(app, scripted_model(function=script), [(QUESTION, ANSWER)])
    assert run_title_job(app, conversation_id) == "Rotating staging API keys"
    assert title_of(app, conversation_id) == "Rotating staging API keys"
    (_messages, info), = script.calls
    assert info.model_settings["max_tokens"] == 60  # the title role's cap
    assert info.function_tools == []  # no tools
    assert not info.allow_text_output and len(info.output_tools) == 1  # structured output


def test_the_title_profile_of_the_configuration_applies(app, scripted_model):
    script = TitleScript("Rotating staging API keys")
    config_id = scripted_model(function=script)
    with app.app_context():
        from app.models import ModelConfig

        config = db.session.get(ModelConfig, config_id)
        config.max_tokens = 4000
        config.profiles = {"title": {"max_tokens": 30, "temperature": 0.0}}
        db.session.commit()
    run_title_job(app, conversation_with(app, config_id, [(QUESTION, ANSWER)]))
    settings = script.calls[0][1].model_settings
    assert settings["max_tokens"] == 30 and settings["temperature"] == 0.0


def test_a_bad_title_is_asked_again_once_with_what_was_wrong(app, scripted_model):
    script = TitleScript("Rotating the staging cluster API keys now.", "Rotating staging keys")
    conversation_id = conversation_with(app, scripted_model(function=script), [(QUESTION, ANSWER)])
    assert run_title_job(app, conversation_id) == "Rotating staging keys"
    assert len(script.calls) == 2
    (retry,) = script.calls[1][0][-1].parts  # the rejected output comes back with what was wrong
    assert getattr(retry, "outcome", "retried") == "retried" or isinstance(retry, RetryPromptPart)
    feedback = retry.model_response_str()
    assert "use at most 40 characters" in feedback and "do not end with punctuation" in feedback


def test_a_title_that_never_passes_falls_back_after_one_retry(app, scripted_model):
    script = TitleScript('"Keys"', '"Keys"', '"Keys"')
    conversation_id = conversation_with(app, scripted_model(function=script), [(QUESTION, ANSWER)])
    assert run_title_job(app, conversation_id) == "How do I rotate the API keys of our"
    assert len(script.calls) == 2


@pytest.mark.parametrize("failure", [
    ModelHTTPError(500, "m", body={"error": {"message": "overloaded"}}),
    ModelHTTPError(401, "m", body="bad key"),
    "TEXT:I cannot help with naming this conversation.",  # a refusal: text where a title was asked
])
def test_a_failing_provider_or_a_refusal_falls_back(app, scripted_model, failure):
    script = TitleScript(failure)
    conversation_id = conversation_with(app, scripted_model(function=script), [(QUESTION, ANSWER)])
    assert run_title_job(app, conversation_id) == "How do I rotate the API keys of our"
    assert title_of(app, conversation_id) == "How do I rotate the API keys of our"


def test_only_the_first_question_and_answer_are_read(app, scripted_model):
    script = TitleScript("Rotating staging API keys")
    conversation_id = conversation_with(app, scripted_model(function=script), [
        (QUESTION, ANSWER), ("SECOND-QUESTION about billing", "SECOND-ANSWER about invoices")])
    run_title_job(app, conversation_id)
    (prompt,) = script.prompts()
    assert QUESTION in prompt and ANSWER in prompt
    assert "SECOND" not in prompt
    assert prompt.index(QUESTION) < prompt.index(ANSWER)


def test_a_title_given_at_creation_is_never_overwritten(app, scripted_model):
    script = TitleScript("Rotating staging API keys")
    conversation_id = conversation_with(app, scripted_model(function=script), [(QUESTION, ANSWER)],
                                        title="My own title")
    assert run_title_job(app, conversation_id) is None
    assert title_of(app, conversation_id) == "My own title" and script.calls == []


def test_a_rename_during_generation_wins(app, scripted_model):
    def rename_then_answer(messages, info):
        with app.app_context():  # the user renames while the title model is thinking
            db.session.execute(db.update(Conversation).values(title="Renamed by me"))
            db.session.commit()
        return TitleScript("Rotating staging API keys")(messages, info)

    model = scripted_model(function=rename_then_answer)
    conversation_id = conversation_with(app, model, [(QUESTION, ANSWER)])
    assert run_title_job(app, conversation_id) is None
    assert title_of(app, conversation_id) == "Renamed by me"


def test_the_log_has_the_id_whether_generated_and_the_length_never_the_text(app, scripted_model, caplog):
    caplog.set_level(logging.DEBUG)
    generated = conversation_with(app, scripted_model(function=TitleScript("Rotating staging API keys")),
                                  [(QUESTION, ANSWER)])
    fallen = conversation_with(app, scripted_model(function=TitleScript(ModelHTTPError(500, "m"))),
                               [(QUESTION, ANSWER)])
    run_title_job(app, generated)
    run_title_job(app, fallen)
    lines = [r.getMessage() for r in caplog.records if r.name == "app.runtime.titles"]
    assert f"conversation {generated} title generated=True length=25 written=True" in lines
    fallback = fallback_title(QUESTION)
    assert f"conversation {fallen} title generated=False length={len(fallback)} written=True" in lines
    everything = "\n".join(r.getMessage() for r in caplog.records)
    for text in ("Rotating staging API keys", fallback, QUESTION, ANSWER, "rotate"):
        assert text not in everything


# --- in a real turn -------------------------------------------------------------------------------

def start_and_send(app, client, config_id: int, text: str) -> tuple[int, str]:
    conversation_id = start_chat(app, client, model_config_id=config_id)
    return conversation_id, send(app, client, conversation_id, text)


def first_answer_with_title(app, client, auth, scripted_model) -> tuple[int, str]:
    """A user's first question, answered; the title job names the chat "Rotating staging API keys"."""
    async def answer(messages, info):
        yield ANSWER

    auth.login_as("user")
    config_id = scripted_model(function=TitleScript("Rotating staging API keys"), stream_function=answer)
    return start_and_send(app, client, config_id, QUESTION)


def test_the_first_answer_gets_a_title_and_the_sidebar_shows_it_without_a_reload(
        app, client, auth, scripted_model):
    conversation_id, _run = first_answer_with_title(app, client, auth, scripted_model)
    assert title_of(app, conversation_id) == "Rotating staging API keys"
    poll = client.get(f"/chat/{conversation_id}/title?tries=0", headers={"HX-Request": "true"})
    assert poll.status_code == 200
    item = f'id="conversation-item-{conversation_id}" class="conversation-item" hx-swap-oob="true"'
    assert item in poll.text
    assert 'id="chat-title" class="chat-title" hx-swap-oob="true"' in poll.text
    assert "Rotating staging API keys" in poll.text


def test_the_end_of_the_stream_brings_a_new_title_and_leaves_an_old_one_alone(
        app, client, auth, scripted_model):
    conversation_id, first_run = first_answer_with_title(app, client, auth, scripted_model)
    first = client.get(f"/runs/{first_run}/events", headers={"HX-Request": "true"}).text
    assert 'id="chat-title" class="chat-title" hx-swap-oob="true"' in first
    assert "Rotating staging API keys" in first

    assert client.post(f"/chat/{conversation_id}/messages", data={"text": "And the prod cluster?"}).status_code == 302
    with app.app_context():
        second_run = db.session.scalar(db.select(Message.run_id).where(
            Message.conversation_id == conversation_id, Message.run_id != first_run))
    execution.wait(second_run)
    second = client.get(f"/runs/{second_run}/events", headers={"HX-Request": "true"}).text
    assert "event: end" in second and ANSWER in second
    assert 'id="chat-title"' not in second and "/title?tries=" not in second


def test_the_sidebar_polls_while_the_title_is_missing_then_gives_up(app, client, auth, scripted_model):
    user_id = auth.login_as("user")
    with app.app_context():
        conversation = Conversation(user_id=user_id, agent_id=make_agent().id)
        db.session.add(conversation)
        db.session.commit()
        conversation_id = conversation.id
    poll = client.get(f"/chat/{conversation_id}/title?tries=2", headers={"HX-Request": "true"})
    assert f"/chat/{conversation_id}/title?tries=3" in poll.text and 'hx-trigger="load delay:' in poll.text
    assert client.get(f"/chat/{conversation_id}/title?tries=8").text.strip() == ""


def test_a_failed_first_turn_is_titled_from_its_question_without_a_model(app, client, auth, scripted_model):
    async def broken(messages, info):
        raise ModelHTTPError(503, "m", body="down")
        yield ""  # pragma: no cover

    auth.login_as("user")
    script = TitleScript("Never asked")
    model = scripted_model(function=script, stream_function=broken)
    conversation_id, run_id = start_and_send(app, client, model, QUESTION)
    assert title_of(app, conversation_id) == "How do I rotate the API keys of our" and script.calls == []
    end = client.get(f"/runs/{run_id}/events", headers={"HX-Request": "true"}).text
    # The end of the stream brings the title, as after an answer.
    assert 'id="chat-title" class="chat-title" hx-swap-oob="true"' in end and "How do I rotate" in end


def test_a_first_turn_that_ends_on_a_card_is_titled_from_its_question(app, client, auth, scripted_model):
    async def ask(messages, info):
        yield {0: DeltaToolCall(name="ask_user_question", tool_call_id="ask-1",
                                json_args='{"question": "Which cluster?", "options": ["staging", "prod"]}')}

    auth.login_as("user")
    script = TitleScript("Never asked")
    with app.app_context():
        agent_id = make_agent(skills=[{"name": "ask_user", "config": {}}],
                              model_config_id=scripted_model(function=script, stream_function=ask)).id
    conversation_id = start_chat(app, client, agent_id=agent_id)
    run, message = outcome(app, send(app, client, conversation_id, "**Rotate** the keys, please"))
    assert run.status == "waiting" and message.meta.get("pending"), message.meta
    assert title_of(app, conversation_id) == "Rotate the keys, please" and script.calls == []


@pytest.mark.parametrize(("question", "title"), [
    ("What time is it in Tokyo?", "What time is it in Tokyo"),  # a short question stays whole
    ("What is the time?", "What is the time"),  # never the separator of the title prompt ("---")
    ("## Release *plan*\n\nWhat ships on Friday and what waits?", "Release plan"),
    (QUESTION, "How do I rotate the"),  # a long one: its first words
])
def test_the_offline_model_titles_from_the_questions_words(app, client, auth, question, title):
    auth.login_as("user")
    conversation_id = start_chat(app, client)  # an agent on the default model: the offline one
    send(app, client, conversation_id, question)
    assert title_of(app, conversation_id) == title
