"""An AG-UI stream whose client has gone gives its stream slot back while the run goes on.

It held the slot until the run's next event or its end: a waiting stream never wrote, and never looked
at its connection. Now it looks between two waits and writes `: keep-alive` every STREAM_HEARTBEAT_SECONDS
(app/web/stream_client.py, shared with the htmx stream). Served by a real HTTP server, as in
tests/test_serving.py, so the connection really closes.
"""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter
from werkzeug.serving import make_server

from app.api.tokens import create_token
from app.extensions import db
from app.models import Conversation, Run, User
from app.runtime import capacity, execution
from app.runtime import events as run_events
from tests.chat_driver import chat_model, until
from tests.conftest import make_agent

EVENTS = TypeAdapter(Event)


def _slow_answer(release: threading.Event):
    async def model(messages, info):
        yield "First words. "
        while not release.is_set():
            await asyncio.sleep(0.01)
        yield "The rest."

    return model


class Served:
    """The app on a real server in a thread, and a chat-scoped token for one user's conversation."""

    def __init__(self, app, auth, scripted_model, release: threading.Event) -> None:
        user_id = auth.create("user")
        with app.app_context():
            user = db.session.get(User, user_id)
            agent = make_agent(model_config_id=chat_model(scripted_model, _slow_answer(release)))
            conversation = Conversation(user_id=user.id, agent_id=agent.id, title="Live")
            db.session.add(conversation)
            _token, secret = create_token(user, "Script", "chat", 7)
            db.session.commit()
            self.conversation_id = conversation.id
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.server.server_port}", timeout=10,
                                   headers={"Authorization": f"Bearer {secret}"})

    def agent(self):
        return self.client.stream("POST", "/api/agent", content=json.dumps(
            {"threadId": self.conversation_id, "message": "Hello"}), headers={"Content-Type": "application/json"})

    def close(self) -> None:
        self.client.close()
        self.server.shutdown()
        self.server.server_close()


def _run_of(app, conversation_id: int) -> str | None:
    with app.app_context():
        return db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id))


def test_a_client_that_closes_mid_run_gives_the_stream_slot_back(app, auth, scripted_model):
    release = threading.Event()
    served = Served(app, auth, scripted_model, release)
    before = capacity.streams()
    run_id = None
    try:
        with served.agent() as stream:
            assert stream.status_code == 200
            run_id = _run_of(app, served.conversation_id)
            assert until(lambda: run_events.waiting(run_id) > 0), "the stream never waited"
            assert capacity.streams() == before + 1
        # The client has gone mid-run; the run goes on.
        assert until(lambda: capacity.streams() == before), "the AG-UI stream kept its slot after the client left"
        with app.app_context():
            assert db.session.get(Run, run_id).status == "running"
    finally:
        release.set()
        if run_id:
            execution.wait(run_id)
        served.close()


def test_a_waiting_stream_writes_keep_alive_comments_that_ag_ui_clients_skip(app, auth, scripted_model):
    app.config["STREAM_HEARTBEAT_SECONDS"] = 1
    release = threading.Event()
    served = Served(app, auth, scripted_model, release)
    run_id = None
    body = ""
    try:
        with served.agent() as stream:
            run_id = _run_of(app, served.conversation_id)
            for text in stream.iter_text():
                body += text
                if ": keep-alive\n\n" in body and not release.is_set():
                    release.set()  # seen while the run waited: let it finish
        assert ": keep-alive\n\n" in body
        blocks = [block for block in body.strip("\n").split("\n\n") if not block.startswith(":")]
        events = [EVENTS.validate_json(block.split("\n")[2][len("data: "):]) for block in blocks]
        assert events[0].type == EventType.RUN_STARTED and events[-1].type == EventType.RUN_FINISHED
    finally:
        release.set()
        if run_id:
            execution.wait(run_id)
        served.close()
