"""Run a turn on the runtime loop: stream its events, then store what it produced in one transaction.

A client that disconnects does not cancel the run; Stop does. Every failure ends the run with an
honest status and keeps the user's message and whatever the run had already produced.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging

from flask import Flask, current_app
from pydantic_ai import CancellationToken, capture_run_messages
from pydantic_ai.exceptions import ModelRequestTimeout, ModelTimeoutError, RunCancelled, UsageLimitExceeded
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.run import AgentRunResultEvent
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import UsageLimits

from app.database import in_write_turn
from app.extensions import db
from app.models import Conversation, Message, Run, RunEvent
from app.models.base import utcnow
from app.runtime import events as run_events
from app.runtime import failures, history, loop
from app.runtime import waiting as run_waiting
from app.runtime.builder import build_agent
from app.runtime.holdback import StreamScreen
from app.runtime.outcome import (
    UNREVIEWED_ERROR,
    Outcome,
    answer_meta,
    count_usage,
    guard_output,
    settle,
    translate,
    usage_from_messages,
)
from app.runtime.record import TurnRecord
from app.runtime.review import UNREVIEWED, shown_context
from app.runtime.skill import TurnEnd
from app.runtime.titles import generate_title
from app.runtime.turn import Turn, prepare_queued

log = logging.getLogger(__name__)

CANCEL_POLL_SECONDS = 1.0

INTERRUPTED = ("The server stopped while this answer was being written. What it had produced is kept; "
               "send your message again to continue.")

_tokens: dict[str, CancellationToken] = {}
_futures: dict[str, concurrent.futures.Future] = {}
_interrupted: set[str] = set()  # runs this process is stopping because it shuts down


def launch(app: Flask, run_id: str) -> concurrent.futures.Future:
    """Prepare a queued run in the caller's thread, then start it on the runtime loop; returns its future.

    Preparing uses a session of its own, so the caller's is left as it was. A run that is no longer
    queued (started already, or gone) is not started again: its future answers None at once.
    """
    with app.app_context():
        turn = prepare_queued(run_id)
    if turn is None:
        done: concurrent.futures.Future = concurrent.futures.Future()
        done.set_result(None)
        return done
    return start(app, turn)


def start(app: Flask, turn: Turn) -> concurrent.futures.Future:
    """Start a prepared turn on the runtime loop and return its future."""
    app.extensions["wakeups"].listen()  # from here on, Stop from any process reaches the run
    future = loop.submit(execute(app, turn))
    _futures[turn.run_id] = future
    future.add_done_callback(lambda _f: _futures.pop(turn.run_id, None))
    return future


def wait(run_id: str, timeout: float = 30.0) -> None:
    """Block until a run launched in this process has ended (for jobs and tests)."""
    future = _futures.get(run_id)
    if future is not None:
        future.result(timeout)


def running() -> int:
    """Return how many runs this process is running now."""
    return len(_futures)


def init_app(app: Flask) -> None:
    """Wire the run events' wake-ups and let Stop reach the runs of this process from any other."""
    run_events.init_app(app)
    run_events.on_stop(cancel_here)


def request_stop(run: Run) -> None:
    """Ask a run to stop, in whichever process runs it (flagged in the database, announced to every process)."""
    run.cancel_requested = True
    run_events.request_stop(current_app._get_current_object(), run.id)


def interrupt_all() -> dict[str, concurrent.futures.Future]:
    """Stop every run of this process because the server shuts down; returns their futures (no wait).

    Each ends as `interrupted`, keeping what it had produced, through the same path as Stop.
    """
    running = dict(_futures)
    _interrupted.update(running)
    for run_id in running:
        cancel_here(run_id)
    return running


def cancel_here(run_id: str) -> None:
    """Cancel the run if it runs in this process (called for every Stop announced)."""
    token = _tokens.get(run_id)
    if token is not None:
        token.cancel()


async def execute(app: Flask, turn: Turn) -> str:
    """Run one prepared turn to its end and store the outcome; returns the final status."""
    run_id = turn.run_id
    writer = run_events.EventWriter(app, run_id)
    # An answer is held until checked (tool steps still go out at once), unless `_drive` finds no
    # output checks on the agent: then it streams through the guardrails' hold-back window.
    writer.hold_text()
    outcome = Outcome()
    if turn.agent is None:
        outcome.status, outcome.error = "failed", "The agent of this conversation no longer exists."
    else:
        await _drive(app, turn, writer, outcome)
        try:
            await settle(outcome, writer)
        except Exception:  # the turn is stored whatever happens here; its answer is held back, never unchecked
            log.exception("run %s: the answer could not be settled", run_id)
            outcome.status, outcome.error, outcome.text = "unfinished", UNREVIEWED_ERROR, [UNREVIEWED]
            writer.discard_text()
            writer.text(UNREVIEWED)
    await writer.settled()  # the events it emitted are stored before its end is (without blocking the loop)
    # The end takes SQLite's write turn before any of its work, and waits and tries again while a burst keeps
    # the one writer busy past its timeout: a run is never left `running` for want of the lock.
    needs_title = await in_write_turn(app, _finish, turn, outcome, writer)
    writer.published()
    if needs_title or outcome.status == run_waiting.WAITING or any(skill.after_turn for skill, *_ in outcome.skills):
        await asyncio.get_running_loop().run_in_executor(None, _follow_ups, app, turn, outcome, needs_title)
    return outcome.status


async def _drive(app: Flask, turn: Turn, writer: run_events.EventWriter, outcome: Outcome) -> None:
    token = CancellationToken()
    _tokens[turn.run_id] = token
    if turn.run_id in _interrupted:  # the server began to shut down before this run got its token
        token.cancel()
    # A Stop served by another process reaches this one as a wake-up; should that be missed, the flag in the
    # database is read every CANCEL_POLL_SECONDS, whether or not the model is sending anything.
    watcher = asyncio.create_task(_watch_cancel_flag(app, turn.run_id, token))
    try:
        with capture_run_messages() as captured:
            try:
                record = TurnRecord(locale=turn.extras.get("locale"), earlier=list(turn.earlier))
                outcome.record = record
                built = build_agent(app, turn.agent, turn.person, turn.conversation_id, turn.run_id,
                                    turn.extras, announce=writer.emit, record=record)
                outcome.skills, outcome.guardrail, outcome.review = built.skills, built.guardrail, built.review
                # Skills that review the answer before anyone sees it (`review_answer`) hold it back until then.
                if not outcome.review.reviewers:  # no reviewers: the answer streams, screened by the guardrails
                    with app.app_context():
                        writer.screen_text(StreamScreen(built.guardrail))
                limits = UsageLimits(request_limit=max(1, turn.agent.max_requests))
                async with built.agent.run_stream_events(
                    turn.prompt if turn.prompt or turn.deferred is None else None,
                    message_history=turn.history, deferred_tool_results=turn.deferred,
                    instructions="\n\n".join(turn.instructions) or None,
                    # Settings a client asked for this turn (the OpenAI-compatible API: max tokens, temperature).
                    model_settings=turn.extras.get("model_settings") or None,
                    usage_limits=limits, cancellation_token=token,
                ) as stream:
                    async for event in stream:
                        if isinstance(event, AgentRunResultEvent):
                            outcome.messages = event.result.all_messages()
                            count_usage(outcome, event.result.usage)
                            if isinstance(event.result.output, DeferredToolRequests):
                                outcome.waiting = event.result.output
                        else:
                            translate(event, writer, outcome)
            except RunCancelled as error:
                outcome.status = "cancelled"
                if turn.run_id in _interrupted:
                    outcome.status, outcome.error = "interrupted", INTERRUPTED
                outcome.messages = error.all_messages()
                count_usage(outcome, error.usage)
            except UsageLimitExceeded as error:
                outcome.status, outcome.error = "unfinished", _limit_message(turn, error)
                outcome.messages = list(captured)
            except (ModelRequestTimeout, ModelTimeoutError) as error:
                outcome.status = "failed"
                outcome.error = turn.agent.model.timeout_message(getattr(error, "timeout", None))
                outcome.messages = list(captured)
            except Exception as error:  # said in Skilldesk's words; the detail is kept for admins and logged
                outcome.status = "failed"
                outcome.error, outcome.error_detail = failures.describe(error)
                if outcome.error_detail is not None:
                    log.warning("run %s failed: %s", turn.run_id, outcome.error_detail, exc_info=error)
                outcome.messages = list(captured)
    finally:
        watcher.cancel()
        _tokens.pop(turn.run_id, None)


def _limit_message(turn: Turn, error: UsageLimitExceeded) -> str:
    return (f"The turn stopped after {turn.agent.max_requests} model requests, the limit set for this agent; "
            "the answer is unfinished and the tool results so far are kept.")


def _finish(turn: Turn, outcome: Outcome, writer: run_events.EventWriter) -> bool:
    """Store the assistant message, model context, usage, status and the end event in one transaction.

    Returns whether the conversation still needs a title.
    """
    usage_from_messages(outcome, len(turn.history))
    refused = guard_output(outcome, writer, len(turn.history))
    if not refused and outcome.messages and outcome.review is not None:
        # The next turn is told what the user saw: the review's text, without the attempts it refused.
        outcome.messages = shown_context(outcome.messages, len(turn.history), "".join(outcome.text),
                                         outcome.review.feedback)
    # Dumped whole: pydantic-ai may add parts to messages of the history it was given.
    context = ModelMessagesTypeAdapter.dump_json(outcome.messages).decode() if outcome.messages else None
    # One statement touches the conversation and tells whether it is still there, undeleted.
    row = db.session.execute(
        db.update(Conversation).where(Conversation.id == turn.conversation_id, Conversation.deleted_at.is_(None))
        .values(updated_at=utcnow(), **({"model_context": context} if context else {}))
        .returning(Conversation.title).execution_options(synchronize_session=False)).first()
    kept = row is not None
    if kept and context:  # matched on the stored text: a context changed since is parsed again
        history.keep(turn.conversation_id, context, outcome.messages)
    if not kept:
        if db.session.get(Conversation, turn.conversation_id) is None:
            return False  # deleted with its user while running (the run went with it): nothing to keep
        # Deleted while running: purged text must not come back.
        outcome.text, outcome.steps, outcome.error = [], {}, None
        writer.discard_text()
        db.session.execute(db.delete(RunEvent).where(RunEvent.run_id == turn.run_id))
    if kept and not refused:
        answer_meta(outcome)
    meta = {"status": outcome.status, **outcome.meta}
    if outcome.error:
        meta["error"] = outcome.error
    if turn.deferred is not None:  # the run carried answers: the end of its stream updates their cards
        meta["resumed"] = True
    notices = _finish_hooks(turn, outcome) if kept else []
    waiting = outcome.waiting
    # A call that waits for a person shows as a card of the message, not as a step that never ends.
    waiting_ids = {call.tool_call_id for call in [*waiting.calls, *waiting.approvals]} if waiting else set()
    message = Message(conversation_id=turn.conversation_id, role="assistant", content="".join(outcome.text),
                      steps=[step for step in outcome.steps.values() if step["id"] not in waiting_ids],
                      meta=meta, run_id=turn.run_id,
                      input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens)
    db.session.add(message)
    db.session.flush()  # the end event names the message, the notice events theirs
    waits_for = None
    if waiting is not None and kept:  # its tools did not all run: it waits for a person, it did not succeed
        waits_for = run_waiting.store(waiting, message, meta, turn.run_id, turn.agent, turn.person)
        outcome.status = run_waiting.WAITING if waits_for else outcome.status
    run_waiting.settle(turn.run_id, outcome.status, waits_for)  # the waiting runs this one carried answers for
    db.session.execute(db.update(Run).where(Run.id == turn.run_id).values(
        status=outcome.status, error=outcome.error, error_detail=outcome.error_detail,
        finished_at=None if waits_for else utcnow(), waiting_for=waits_for, input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens, requests=outcome.requests).execution_options(synchronize_session=False))
    # Whatever the first turn brought (an answer, a failure, a card), the chat gets a title after it.
    needs_title = kept and row.title is None
    # The text not yet stored lands with the end event, in this transaction. The end tells the page
    # whether a title is on its way, so a chat that has one does not render it again.
    # And whether a job after the reply may add a notice (a skill's `after_turn`: the compaction above its
    # threshold), for the page to look for it.
    notices_pending = kept and outcome.status == "succeeded" and any(skill.after_turn for skill, *_ in outcome.skills)
    writer.stage(*[(run_events.NOTICE, {"message_id": notice.id}) for notice in notices],
                 (run_events.END, {"status": outcome.status, "error": outcome.error, "message_id": message.id,
                                   "title_pending": needs_title, "notices_pending": notices_pending}))
    db.session.commit()
    log.info("run %s %s: %s requests, %s+%s tokens", turn.run_id, outcome.status, outcome.requests,
             outcome.input_tokens, outcome.output_tokens)
    return needs_title


def _turn_end(turn: Turn, outcome: Outcome, built: list) -> TurnEnd:
    return TurnEnd(current_app._get_current_object(), turn.conversation_id, turn.run_id, outcome.status, built)


def _finish_hooks(turn: Turn, outcome: Outcome) -> list[Message]:
    """Let each skill add what it keeps of the run (before the answer); return the notices to show."""
    notices: list[Message] = []
    for skill, config, built in outcome.skills:
        if skill.finish_turn is not None:
            end = _turn_end(turn, outcome, built)
            skill.finish_turn(config, end)
            notices += end.notices
    return notices


def _follow_ups(app: Flask, turn: Turn, outcome: Outcome, needs_title: bool) -> None:
    """Queue the jobs that follow a turn (the title, the skills' `after_turn`), off the runtime loop."""
    if outcome.status == run_waiting.WAITING:  # tell the people who may decide (app/waiting/)
        run_waiting.announce(app, turn.run_id)
    with app.app_context():
        try:
            if needs_title:
                generate_title.delay(turn.conversation_id)
        except Exception:  # follow-ups are niceties: never let them break the turn
            log.exception("could not queue the title of conversation %s", turn.conversation_id)
        for skill, config, built in outcome.skills:
            if skill.after_turn is None:
                continue
            try:
                skill.after_turn(config, _turn_end(turn, outcome, built))
            except Exception:  # a skill's follow-up must never break the turn
                log.exception("after_turn of skill %s failed (conversation %s)", skill.name, turn.conversation_id)


async def _watch_cancel_flag(app: Flask, run_id: str, token: CancellationToken) -> None:
    """Cancel the run once its database flag says Stop (read off the loop, a short query a second)."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(CANCEL_POLL_SECONDS)
        try:
            requested = await loop.run_in_executor(None, _cancel_requested, app, run_id)
        except Exception:  # the database is busy or gone for a moment: the next poll tries again
            log.warning("run %s: could not read its Stop flag", run_id, exc_info=True)
            continue
        if requested:
            token.cancel()
            return


def _cancel_requested(app: Flask, run_id: str) -> bool:
    with app.app_context():
        return bool(db.session.scalar(db.select(Run.cancel_requested).where(Run.id == run_id)))
