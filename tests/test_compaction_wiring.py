"""Compaction in the chat: the job after a reply, /compact, the notice, the record and its purge."""

from __future__ import annotations

import html
import re

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, TextPart

from app.extensions import db
from app.models import CompactionRecord, Conversation, Message, Run
from app.runtime import execution, offline
from app.runtime.compaction import SUMMARY_HEADER
from tests.chat_driver import sse_events, start_chat

LONG = ("Please file invoice INV-{n} for order #{n}0 from https://example.org/orders/{n} and note that "
        "the customer asked for delivery before the end of the month. ") * 8


def settings(**overrides) -> dict:
    base = {"compact_above": 100_000, "keep_recent_messages": 300, "keep_recent_tool_results": 200,
            "minimum_worth_clearing": 0, "allow_compact": True, "show_notice": True, "keep_record": True}
    return {**base, **overrides}


def compacting_chat(app, client, auth, config: dict, model_config_id: int | None = None) -> int:
    """Sign in as a user and start a chat with an agent that has the compaction skill with these settings."""
    auth.login_as("user")
    return start_chat(app, client, skills=[{"name": "compaction", "config": config}], model_config_id=model_config_id)


def say(app, client, conversation_id: int, text: str):
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": text},
                           headers={"HX-Request": "true"})
    with app.app_context():
        run_id = db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id)
                                   .order_by(Run.created_at.desc()).limit(1))
    if run_id:
        execution.wait(run_id)
    return response


def test_compact_command_shortens_only_the_model_context(app, client, auth):
    conversation_id = compacting_chat(app, client, auth, settings())
    for n in range(1, 5):
        say(app, client, conversation_id, LONG.format(n=n))

    response = say(app, client, conversation_id, "/compact keep every invoice number")

    assert response.status_code == 200
    assert "The conversation was shortened for the model" in response.text
    with app.app_context():
        conversation = db.session.get(Conversation, conversation_id)
        context = conversation.model_context
        transcript = db.session.scalars(db.select(Message).where(Message.conversation_id == conversation_id)
                                        .order_by(Message.id)).all()
        record = db.session.scalar(db.select(CompactionRecord))
        runs = db.session.scalar(db.select(db.func.count(Run.id)).where(Run.conversation_id == conversation_id))
    # The transcript keeps every message word for word, plus the command and a notice.
    assert transcript[0].content == LONG.format(n=1).strip()
    assert [m.role for m in transcript[-2:]] == ["user", "notice"]
    assert transcript[-2].content == "/compact keep every invoice number"
    assert runs == 4  # the command started no model turn
    # The model context holds one summary that kept the identifiers and followed the instructions.
    assert context.count(SUMMARY_HEADER) == 1
    assert "INV-1" in context and "INV-2" in context
    assert record.trigger == "command" and record.summary and record.removed


def test_compact_refused_when_the_agent_does_not_allow_it(app, client, auth):
    conversation_id = compacting_chat(app, client, auth, settings(allow_compact=False))
    response = say(app, client, conversation_id, "/compact")
    assert response.status_code == 422
    assert "does not allow /compact" in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Message.id))) == 0


def test_threshold_compaction_runs_after_the_reply(app, client, auth):
    conversation_id = compacting_chat(app, client, auth, settings(compact_above=1_000, keep_recent_messages=200,
                                                             keep_recent_tool_results=100))
    for n in range(1, 4):
        say(app, client, conversation_id, LONG.format(n=n))
    with app.app_context():
        context = db.session.get(Conversation, conversation_id).model_context
        notices = db.session.scalars(db.select(Message.content).where(Message.role == "notice")).all()
    assert SUMMARY_HEADER in context
    assert notices and all("shortened" in notice for notice in notices)


def test_the_notice_of_a_compaction_after_the_reply_reaches_the_open_page(app, client, auth):
    """As the page sees it: the run's end says a notice may follow and where to look; the look places it after
    the answer, as a reload does, and says nothing of a notice a run or a command stored."""
    conversation_id = compacting_chat(app, client, auth, settings(compact_above=1_000, keep_recent_messages=200,
                                                             keep_recent_tool_results=100))
    for n in range(1, 4):
        say(app, client, conversation_id, LONG.format(n=n))
    with app.app_context():
        notice = db.session.scalar(db.select(Message).where(Message.role == "notice").order_by(Message.id.desc()))
        assert notice is not None and notice.run_id is None, "the job made no notice after a reply"
        run_id, answer_id = db.session.execute(
            db.select(Run.id, Message.id).join(Message, Message.run_id == Run.id)
            .where(Run.conversation_id == conversation_id, Message.role == "assistant", Message.id < notice.id)
            .order_by(Message.id.desc()).limit(1)).one()
    end = next(event["data"] for event in sse_events(client.get(f"/runs/{run_id}/events").text)
               if event["event"] == "end")
    look = re.search(r'hx-get="([^"]*/notices[^"]*)"', end).group(1)
    assert look == f"/chat/{conversation_id}/after/{answer_id}/notices?tries=0"
    found = client.get(html.unescape(look))
    assert found.status_code == 200
    assert f'hx-swap-oob="afterend:#message-{answer_id}"' in found.text
    assert f'id="message-{notice.id}"' in found.text and "shortened" in found.text
    assert "hx-get" not in found.text  # found: no further look
    # Before the notice (after the later one): nothing yet, and another look, up to a bound.
    later = client.get(f"/chat/{conversation_id}/after/{notice.id}/notices?tries=0").text
    assert "hx-swap-oob" not in later and "tries=1" in later
    assert client.get(f"/chat/{conversation_id}/after/{notice.id}/notices?tries=99").text.strip() == ""
    auth.logout()
    auth.login_as("admin")  # someone else's chat names nothing
    assert client.get(html.unescape(look)).status_code == 404


def test_a_turn_of_an_agent_without_after_reply_jobs_looks_for_no_notice(app, client, auth):
    auth.login_as("user")
    conversation_id = start_chat(app, client)
    say(app, client, conversation_id, "Hello")
    with app.app_context():
        run_id = db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id))
    end = next(event["data"] for event in sse_events(client.get(f"/runs/{run_id}/events").text)
               if event["event"] == "end")
    assert "/notices" not in end


def test_deleting_the_conversation_purges_the_records(app, client, auth):
    conversation_id = compacting_chat(app, client, auth, settings())
    for n in range(1, 4):
        say(app, client, conversation_id, LONG.format(n=n))
    say(app, client, conversation_id, "/compact")
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(CompactionRecord.id))) == 1
    client.post(f"/chat/{conversation_id}/delete")
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(CompactionRecord.id))) == 0


def test_records_are_for_admins_only(app, client, auth):
    conversation_id = compacting_chat(app, client, auth, settings())
    assert client.get(f"/admin/conversations/{conversation_id}/compactions").status_code == 403
    auth.logout()
    auth.login_as("admin")
    assert client.get(f"/admin/conversations/{conversation_id}/compactions").status_code == 200


# --- A compaction that does not make the context smaller fails, on every path -------------------------

WORDY = "## Objective\n- " + "a summary that says much more than the messages it replaces " * 300
OVERFLOW = {"error": {"code": 400, "type": "exceed_context_size_error",
                      "message": "the request exceeds the available context size"}}


class GrowingSummaries:
    """A scripted model whose summaries are longer than what they replace; chat turns overflow on demand."""

    def __init__(self, scripted_model) -> None:
        self.overflow = False
        self.config_id = scripted_model(function=self.respond, stream_function=self.stream)

    def respond(self, messages, info):
        if info.instructions and offline.SUMMARY_MARKER in info.instructions:
            return ModelResponse(parts=[TextPart(WORDY)])
        return offline.respond(messages, info)  # titles

    async def stream(self, messages, info):
        if self.overflow:
            raise ModelHTTPError(400, "local-model", OVERFLOW)
        yield "Noted."


def notices_and_context(app, conversation_id: int) -> tuple[list[str], str]:
    with app.app_context():
        notices = db.session.scalars(db.select(Message.content).where(
            Message.conversation_id == conversation_id, Message.role == "notice")).all()
        return notices, db.session.get(Conversation, conversation_id).model_context


def test_an_overflow_that_compaction_cannot_shorten_fails_the_run_with_the_providers_words(
        app, client, auth, scripted_model):
    model = GrowingSummaries(scripted_model)
    conversation_id = compacting_chat(app, client, auth, settings(), model.config_id)
    for n in range(1, 4):
        say(app, client, conversation_id, LONG.format(n=n))
    model.overflow = True

    say(app, client, conversation_id, "And the next one?")

    with app.app_context():
        run = db.session.scalar(db.select(Run).where(Run.conversation_id == conversation_id)
                                .order_by(Run.created_at.desc()).limit(1))
        status, error = run.status, run.error
    assert status == "failed"
    assert error.startswith("The provider answered 400: the request exceeds the available context size")
    assert "The conversation could not be made shorter: the summary was not shorter" in error
    notices, context = notices_and_context(app, conversation_id)
    assert notices and not any("shortened" in notice for notice in notices)
    assert SUMMARY_HEADER not in context and context.count("And the next one?") == 1


def test_slash_compact_that_cannot_shorten_says_so_and_keeps_the_context(app, client, auth, scripted_model):
    model = GrowingSummaries(scripted_model)
    conversation_id = compacting_chat(app, client, auth, settings(), model.config_id)
    for n in range(1, 4):
        say(app, client, conversation_id, LONG.format(n=n))
    _, before = notices_and_context(app, conversation_id)

    response = say(app, client, conversation_id, "/compact")

    assert response.status_code == 200
    assert "could not be made shorter" in response.text and "shortened" not in response.text
    notices, context = notices_and_context(app, conversation_id)
    assert context == before
    with app.app_context():
        record = db.session.scalar(db.select(CompactionRecord))
        assert record.trigger == "command" and "not shorter" in record.error


def test_threshold_compaction_that_cannot_shorten_leaves_the_context(app, client, auth, scripted_model):
    model = GrowingSummaries(scripted_model)
    conversation_id = compacting_chat(app, client, auth, settings(compact_above=1_000, keep_recent_messages=200,
                                                             keep_recent_tool_results=100), model.config_id)
    for n in range(1, 9):
        say(app, client, conversation_id, LONG.format(n=n))
    notices, context = notices_and_context(app, conversation_id)
    assert SUMMARY_HEADER not in context
    assert notices and all("could not be made shorter" in notice for notice in notices)
