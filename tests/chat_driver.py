"""Drive chats through HTTP in tests: start a conversation, send a message, wait for its run, read it back."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import AsyncIterator, Callable

from flask import Flask
from flask.testing import FlaskClient
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ToolReturnPart

from app.extensions import db
from app.models import Conversation, Message, PendingCall, Run
from app.runtime import execution, offline
from tests.conftest import make_agent


def start_chat(app: Flask, client: FlaskClient, agent_id: int | None = None, **agent_kwargs) -> int:
    """Start a conversation through the app (with a new agent unless one is given); return its id."""
    if agent_id is None:
        with app.app_context():
            agent_id = make_agent(**agent_kwargs).id
    response = client.post("/chat/", data={"agent_id": agent_id})
    assert response.status_code == 302, response.text
    return int(response.location.rstrip("/").rsplit("/", 1)[-1])


def send(app: Flask, client: FlaskClient, conversation_id: int, text: str, wait: bool = True,
         timeout: float = 30.0) -> str:
    """Send a message over HTTP; return the run id (once the run ended, unless wait is False)."""
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": text})
    assert response.status_code == 302, response.text
    run_id = last_run_id(app, conversation_id)
    if wait:
        execution.wait(run_id, timeout)
    return run_id


def last_run_id(app: Flask, conversation_id: int) -> str:
    """Return the run of the conversation's latest user message."""
    with app.app_context():
        return db.session.scalar(db.select(Message.run_id).where(
            Message.conversation_id == conversation_id, Message.role == "user").order_by(Message.id.desc()))


def outcome(app: Flask, run_id: str) -> tuple[Run, Message | None]:
    """Return the run and the assistant message it produced, detached from the session."""
    with app.app_context():
        run = db.session.get(Run, run_id)
        message = db.session.scalar(db.select(Message).where(Message.run_id == run_id,
                                                             Message.role == "assistant"))
        db.session.expunge_all()
        return run, message


def answer_of(app: Flask, run_id: str) -> str | None:
    """Return the text of the assistant message the run produced."""
    with app.app_context():
        return db.session.scalar(db.select(Message.content).where(Message.run_id == run_id,
                                                                  Message.role == "assistant"))


def resumed_run(app: Flask, call_id: int) -> Run:
    """Wait for the run that an answer to a pending call (a card) started; return it, detached."""
    with app.app_context():
        run_id = db.session.get(PendingCall, call_id).resume_run_id
    assert run_id is not None, f"no run resumed call {call_id}"
    execution.wait(run_id)
    with app.app_context():
        run = db.session.get(Run, run_id)
        db.session.expunge(run)
        return run


def calls_of(app: Flask, conversation_id: int) -> list[PendingCall]:
    """Return the conversation's pending calls (cards: approvals, plans, questions), oldest first, detached."""
    with app.app_context():
        calls = list(db.session.scalars(db.select(PendingCall).where(PendingCall.conversation_id == conversation_id)
                                        .order_by(PendingCall.id)))
        db.session.expunge_all()
        return calls


def model_context(app: Flask, conversation_id: int) -> list[ModelMessage]:
    """Return the conversation's stored model context, parsed."""
    with app.app_context():
        return ModelMessagesTypeAdapter.validate_json(db.session.get(Conversation, conversation_id).model_context)


def tool_results(app: Flask, conversation_id: int) -> list:
    """Return the contents of what the tools gave back in the conversation's model context."""
    return [part.content for part in tool_returns(app, conversation_id)]


def tool_returns(app: Flask, conversation_id: int) -> list[ToolReturnPart]:
    """Return what the tools gave back in the conversation's model context, in order."""
    return [part for message in model_context(app, conversation_id) if isinstance(message, ModelRequest)
            for part in message.parts if isinstance(part, ToolReturnPart)]


def chat_model(scripted_model: Callable[..., int], stream: Callable[..., AsyncIterator]) -> int:
    """A scripted chat model; titles (non-streamed requests) are answered by the offline model."""
    return scripted_model(function=offline.respond, stream_function=stream)


def words(*parts: str) -> Callable[..., AsyncIterator[str]]:
    """A stream function that answers with the given chunks."""

    async def stream(messages, info):
        for part in parts:
            yield part

    return stream


def working_until(release: threading.Event) -> Callable[..., AsyncIterator[str]]:
    """A stream function that says "Working", then a dot every 50 ms until release is set (120 s at most:
    a safety cap, far past what a busy machine needs to cancel, disconnect or send again)."""

    async def stream(messages, info):
        yield "Working"
        for _ in range(2_400):
            if release.is_set():
                break
            await asyncio.sleep(0.05)
            yield "."

    return stream


def read_in_thread(client: FlaskClient, url: str, chunks: list[bytes]) -> threading.Thread:
    """Read a streamed response into chunks in a started daemon thread (it must be read where it was opened)."""

    def read() -> None:
        stream = client.get(url)
        try:
            chunks.extend(stream.response)
        finally:
            stream.close()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def until(condition: Callable[[], object], seconds: float = 60) -> bool:
    """Poll the condition until it holds or the seconds are over; return whether it holds."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(condition())


def sse_events(body: str) -> list[dict[str, str]]:
    """Parse a text/event-stream body into events with id, event and data."""
    events = []
    for block in body.split("\n\n"):
        if not block.strip() or block.startswith(":"):
            continue
        event: dict[str, str] = {"data": ""}
        for line in block.split("\n"):
            key, _, value = line.partition(": ")
            if key == "data":
                event["data"] += ("\n" if event["data"] else "") + value
            elif key in ("id", "event"):
                event[key] = value
        events.append(event)
    return events


def strip_tags(html: str) -> str:
    """Return the text of an HTML fragment."""
    return re.sub(r"<[^>]+>", "", html)
