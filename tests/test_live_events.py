"""Live events across processes: an event or a Stop from another process wakes this one.

Each test runs a second Python process on the same database, as another gunicorn worker would,
once over PostgreSQL LISTEN/NOTIFY and once over Redis pub/sub (where each is configured).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app import create_app
from app.extensions import db
from app.models import Conversation, Run
from app.runtime import events as run_events
from app.runtime import execution
from tests.chat_driver import chat_model, outcome, send, start_chat
from tests.conftest import AuthActions, make_agent, make_user

ROOT = Path(__file__).resolve().parent.parent
DATABASE_URL = os.environ.get("SKILLDESK_TEST_DATABASE_URL")
REDIS_URL = os.environ.get("SKILLDESK_TEST_REDIS_URL")

BACKENDS = [
    pytest.param("postgresql", marks=pytest.mark.skipif(
        not DATABASE_URL, reason="SKILLDESK_TEST_DATABASE_URL is not set (a PostgreSQL database)")),
    pytest.param("redis", marks=pytest.mark.skipif(
        not REDIS_URL, reason="SKILLDESK_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/14)")),
    "local",  # a Unix socket per process (the embedded default under `flask serve`): always available
]

EMIT = """
import json, sys
from app import create_app
from app.runtime.events import EventWriter
app = create_app(json.loads(sys.argv[1]))
EventWriter(app, sys.argv[2], int(sys.argv[3])).emit("text", {"delta": "from another process"})
"""

STOP = """
import json, sys
from app import create_app
from app.runtime import execution
from app.extensions import db
from app.models import Run
app = create_app(json.loads(sys.argv[1]))
with app.app_context():
    execution.request_stop(db.session.get(Run, sys.argv[2]))
"""


@pytest.fixture(params=BACKENDS)
def live(request, app, settings, tmp_path):
    """A second app on the test database whose run events cross processes through the backend."""
    config = {**settings, "LIVE_EVENTS": request.param, "REDIS_URL": REDIS_URL if request.param == "redis" else None,
              "JOBS_SQLITE_PATH": str(tmp_path / "jobs.sqlite3")}  # sockets of its own (their folder is beside it)
    other = create_app(config)
    other.config["TEST_OVERRIDES"] = config
    yield other
    with other.app_context():
        db.session.remove()
        db.engine.dispose()


def in_another_process(app, script: str, *args: str) -> None:
    """Run a script in a fresh Python process with the same configuration, as another worker."""
    subprocess.run([sys.executable, "-c", script, json.dumps(app.config["TEST_OVERRIDES"]), *args],
                   cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, timeout=120)


def a_running_run(app) -> str:
    with app.app_context():
        user = make_user()
        agent = make_agent()
        conversation = Conversation(user_id=user.id, agent_id=agent.id)
        db.session.add(conversation)
        db.session.flush()
        run = Run(conversation_id=conversation.id, user_id=user.id, agent_id=agent.id, status="running")
        db.session.add(run)
        db.session.commit()
        return run.id


def test_an_event_stored_by_another_process_wakes_a_listener(live):
    run_id = a_running_run(live)
    assert live.extensions["wakeups"].crosses_processes
    with live.app_context():
        run_events.wait_for_events(run_id, 0, 0)  # the first wait starts this process's listener
    woken: list[bool] = []

    def listen() -> None:
        with live.app_context():
            woken.append(run_events.wait_for_events(run_id, 0, timeout=60))

    listener = threading.Thread(target=listen)
    listener.start()
    in_another_process(live, EMIT, run_id, "0")
    listener.join(90)
    assert woken == [True]
    with live.app_context():  # the stored event is what the listener reads
        assert [(e.seq, e.data["delta"]) for e in run_events.events_after(run_id, 0)] == \
            [(1, "from another process")]


def test_stop_from_another_process_ends_a_run_waiting_on_its_model(live, scripted_model):
    started = threading.Event()

    async def silent_after_a_word(messages, info):
        yield "Thinking"
        started.set()
        await asyncio.sleep(60)  # no events meanwhile: only the wake-up can bring the Stop in
        yield " never"

    client = live.test_client()
    AuthActions(live, client).login_as("user")
    conversation_id = start_chat(live, client, model_config_id=chat_model(scripted_model, silent_after_a_word))
    run_id = send(live, client, conversation_id, "Take your time", wait=False)
    assert started.wait(10)
    in_another_process(live, STOP, run_id)
    execution.wait(run_id, timeout=45)
    run, message = outcome(live, run_id)
    assert run.status == "cancelled" and run.cancel_requested
    assert message.content.startswith("Thinking") and "never" not in message.content
