"""Serving many people from one process: no connection held while waiting, backpressure, clients that leave."""

from __future__ import annotations

import asyncio
import threading
import time

from app.extensions import db
from app.runtime import events as run_events
from app.runtime import execution
from tests.chat_driver import chat_model, send, start_chat


def _slow_answer(release: threading.Event):
    async def model(messages, info):
        yield "First words. "
        while not release.is_set():
            await asyncio.sleep(0.01)
        yield "The rest."

    return model


def _read_in_thread(client, url: str, chunks: list[bytes]) -> threading.Thread:
    def read() -> None:  # a streamed response must be read in the thread that opened it
        stream = client.get(url)
        try:
            chunks.extend(stream.response)
        finally:
            stream.close()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def _until(condition, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_stream_follower_holds_no_connection_while_it_waits(app, client, auth, scripted_model):
    release = threading.Event()
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, _slow_answer(release)))
    run_id = send(app, client, conversation_id, "Hello", wait=False)
    with app.app_context():
        pool = db.engine.pool
    chunks: list[bytes] = []
    reader = _read_in_thread(client, f"/runs/{run_id}/events", chunks)
    try:
        # Sampled between two looks at the follower, so the sample falls inside one of its waits.
        samples = []
        for _ in range(5):
            assert _until(lambda: run_events.waiting(run_id) > 0), "the follower never waited"
            checked_out = pool.checkedout()
            if run_events.waiting(run_id) > 0:
                samples.append(checked_out)
        assert samples and set(samples) == {0}, f"connections checked out during the wait: {samples}"
    finally:
        release.set()
        reader.join(10)
        execution.wait(run_id)
    assert any(b"event: end" in chunk for chunk in chunks)
