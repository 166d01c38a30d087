"""Benchmark a chat turn, the sidebar and opening long conversations.

Run with the project's venv: `.venv/bin/python benchmarks/chat_turn.py`. Prints one figure per line,
`name: value unit (target …)`, and exits 1 when a target of issue 3 is missed. Every figure is a ratio
against a baseline measured side by side in the same process, because the machine is shared and noisy.
The turn figures are information only: they run on a `FunctionModel`, never on the provider path real
deployments take, which `benchmarks/serving.py` measures (with targets) instead.

(a) a turn through HTTP + SSE against a minimal Flask app doing the same exchange (POST the message,
    read the SSE stream) for the same pydantic-ai agent on the same instant FunctionModel, with no
    storage, auth or rendering: the ratio and the added milliseconds (no target: see serving.py). Both sides hold one
    conversation whose history grows turn by turn, so the model sees the same messages on both; the
    baseline keeps that history in a dict;
(b) the sidebar's first page at 100 and at 10,000 conversations: target ratio ≤ 1.3;
(c) opening a 2,000-message conversation against a 10-message one (reported, no target).
"""

from __future__ import annotations

import logging
import queue
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
from flask import Flask, Response, request
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.run import AgentRunResultEvent
from werkzeug.serving import make_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import flask_migrate  # noqa: E402
from _figures import Figures, timed  # noqa: E402

from app import create_app  # noqa: E402
from app.accounts.users import create_user  # noqa: E402
from app.extensions import db  # noqa: E402
from app.models import Agent, Conversation, Message, ModelConfig  # noqa: E402
from app.models.base import utcnow  # noqa: E402
from app.runtime import loop, providers  # noqa: E402

TURNS = 40
ROUNDS = 5
PASSWORD = "benchmark password"


async def instant(messages, info):
    yield "The answer is forty-two."


MODEL = FunctionModel(stream_function=instant)


class CpuMeter:
    """WSGI middleware adding up the CPU time the app spends in request threads, streamed bodies included.

    Waiting (for the run, for the database) costs no CPU, so the figure is the app's own work per request.
    """

    def __init__(self, app: Flask) -> None:
        self.app, self.seconds = app, 0.0

    def __call__(self, environ, start_response):
        start = time.thread_time()
        body = self.app(environ, start_response)
        self.seconds += time.thread_time() - start
        return self._metered(body)

    def _metered(self, body):
        iterator = iter(body)
        try:
            while True:
                start = time.thread_time()
                try:
                    chunk = next(iterator)
                except StopIteration:
                    return
                finally:
                    self.seconds += time.thread_time() - start
                yield chunk
        finally:
            if hasattr(body, "close"):
                start = time.thread_time()
                body.close()
                self.seconds += time.thread_time() - start


def serve(app) -> tuple[str, object]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def baseline_app() -> Flask:
    """The same exchange with nothing else: no storage, no auth, no rendering."""
    base = Flask("baseline")
    agent = PydanticAgent(MODEL)
    streams: dict[str, queue.Queue] = {}
    history: list = []

    @base.post("/send")
    def send():
        run_id, events = uuid.uuid4().hex, queue.Queue()
        streams[run_id] = events

        async def go(text: str) -> None:
            async with agent.run_stream_events(text, message_history=history) as stream:
                async for event in stream:
                    if isinstance(event, AgentRunResultEvent):  # the answer, and the history for next time
                        history[:] = event.result.all_messages()
                        events.put(event.result.output)
                    else:  # each event by its kind, so the stream carries as many events as the model made
                        events.put(type(event).__name__)
            events.put(None)

        loop.submit(go(request.form["text"]))
        return run_id

    @base.get("/events/<run_id>")
    def events(run_id: str):
        def follow():
            stream = streams.pop(run_id)
            while (item := stream.get()) is not None:
                yield f"data: {item}\n\n"
            yield "event: end\ndata: done\n\n"

        return Response(follow(), mimetype="text/event-stream")

    return base


def read_until_end(client: httpx.Client, url: str, headers: dict | None = None) -> None:
    with client.stream("GET", url, headers=headers) as response:
        for line in response.iter_lines():
            if line == "event: end":
                break


def baseline_turn(client: httpx.Client, base: str) -> None:
    run_id = client.post(f"{base}/send", data={"text": "hello"}).text
    read_until_end(client, f"{base}/events/{run_id}")


def skilldesk_turn(client: httpx.Client, base: str, conversation_id: int, token: str) -> None:
    response = client.post(f"{base}/chat/{conversation_id}/messages", data={"text": "hello", "csrf_token": token},
                           headers={"HX-Request": "true", "X-CSRFToken": token})
    response.raise_for_status()
    run_id = re.search(r'data-run="([0-9a-f]+)"', response.text).group(1)
    read_until_end(client, f"{base}/runs/{run_id}/events", headers={"HX-Request": "true"})


def sign_in(client: httpx.Client, base: str, email: str) -> str:
    page = client.get(f"{base}/login").text
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    client.post(f"{base}/login", data={"email": email, "password": PASSWORD, "csrf_token": token})
    page = client.get(f"{base}/chat/").text
    return re.search(r'"X-CSRFToken": "([^"]+)"', page).group(1)


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="skilldesk-bench-"))
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'bench.sqlite3'}",
                      "JOBS_IMMEDIATE": True, "SECRET_KEY": "bench", "JOBS_SQLITE_PATH": str(folder / "j.db")})
    providers.register_provider("bench", lambda _spec: MODEL)
    with app.app_context():
        flask_migrate.upgrade()
        user = create_user("bench@example.org", "Bench", PASSWORD, "user")
        many = create_user("many@example.org", "Many", PASSWORD, "user")
        config = ModelConfig(name="bench", provider="bench", model_name="bench", context_window=32000,
                             timeout=30, profiles={}, is_default=True)
        db.session.add(config)
        db.session.flush()
        agent = Agent(name="Bench", instructions="", model_config_id=config.id, roles=["user"], skills=[],
                      max_requests=5)
        db.session.add(agent)
        db.session.flush()
        chat = Conversation(user_id=user.id, agent_id=agent.id, title="Bench chat")
        db.session.add(chat)
        db.session.commit()
        chat_id, user_id, many_id, agent_id = chat.id, user.id, many.id, agent.id

    figures = Figures()
    report = figures.report

    # (a) a chat turn, interleaved with the baseline round by round
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access-log line per request, on either side
    ours_meter, base_meter = CpuMeter(app), CpuMeter(baseline_app())
    ours_base, ours_server = serve(ours_meter)
    base_url, base_server = serve(base_meter)
    with httpx.Client(timeout=30) as ours, httpx.Client(timeout=30) as theirs:
        token = sign_in(ours, ours_base, "bench@example.org")
        for _ in range(3):  # warm both up
            baseline_turn(theirs, base_url)
            skilldesk_turn(ours, ours_base, chat_id, token)
        ours_times, base_times = [], []
        ours_meter.seconds = base_meter.seconds = 0.0
        for _ in range(ROUNDS):
            base_times += timed(lambda: baseline_turn(theirs, base_url), TURNS // ROUNDS)
            ours_times += timed(lambda: skilldesk_turn(ours, ours_base, chat_id, token), TURNS // ROUNDS)
    ours_ms, base_ms = statistics.median(ours_times) * 1000, statistics.median(base_times) * 1000
    ratio = ours_ms / base_ms
    report("chat_turn_baseline_p50", base_ms, "ms")
    report("chat_turn_skilldesk_p50", ours_ms, "ms")
    report("chat_turn_added", ours_ms - base_ms, "ms")
    report("chat_turn_ratio", ratio, "x")
    # Where the added time goes: the CPU the two requests of a turn spend in the app (not in the run).
    report("chat_turn_requests_cpu_baseline", base_meter.seconds / len(base_times) * 1000, "ms")
    report("chat_turn_requests_cpu_skilldesk", ours_meter.seconds / len(ours_times) * 1000, "ms")
    if "--turn-only" in sys.argv:  # (a) alone, for quick comparisons
        return figures.print()

    # (b) the sidebar's first page at 100 and at 10,000 conversations
    with app.app_context():
        now = utcnow()
        db.session.execute(db.insert(Conversation), [
            {"user_id": user_id, "agent_id": agent_id, "title": f"Chat {i}", "source": "chat", "created_at": now,
             "updated_at": now} for i in range(100)])
        db.session.execute(db.insert(Conversation), [
            {"user_id": many_id, "agent_id": agent_id, "title": f"Chat {i}", "source": "chat", "created_at": now,
             "updated_at": now} for i in range(10_000)])
        db.session.commit()
    with httpx.Client(timeout=30) as few_client, httpx.Client(timeout=30) as many_client:
        sign_in(few_client, ours_base, "bench@example.org")
        sign_in(many_client, ours_base, "many@example.org")
        few, lots = [], []
        for _ in range(ROUNDS):
            few += timed(lambda: few_client.get(f"{ours_base}/chat/sidebar").raise_for_status(), 10)
            lots += timed(lambda: many_client.get(f"{ours_base}/chat/sidebar").raise_for_status(), 10)
    ratio = statistics.median(lots) / statistics.median(few)
    report("sidebar_100_p50", statistics.median(few) * 1000, "ms")
    report("sidebar_10000_p50", statistics.median(lots) * 1000, "ms")
    report("sidebar_ratio", ratio, "x", "≤ 1.3", ratio <= 1.3)

    # (c) opening a 2,000-message conversation against a 10-message one
    with app.app_context():
        ids = []
        for count in (10, 2000):
            conversation = Conversation(user_id=user_id, agent_id=agent_id, title=f"{count} messages")
            db.session.add(conversation)
            db.session.flush()
            db.session.execute(db.insert(Message), [
                {"conversation_id": conversation.id, "role": "user" if i % 2 == 0 else "assistant",
                 "content": f"Message number {i} with **some** markdown and a list:\n\n- one\n- two",
                 "steps": [], "meta": {}, "input_tokens": 0, "output_tokens": 0, "created_at": now}
                for i in range(count)])
            ids.append(conversation.id)
        db.session.commit()
    with httpx.Client(timeout=60) as client:
        sign_in(client, ours_base, "bench@example.org")
        short, long = [], []
        for _ in range(ROUNDS):
            short += timed(lambda: client.get(f"{ours_base}/chat/{ids[0]}").raise_for_status(), 2)
            long += timed(lambda: client.get(f"{ours_base}/chat/{ids[1]}").raise_for_status(), 2)
    report("open_10_messages_p50", statistics.median(short) * 1000, "ms")
    report("open_2000_messages_p50", statistics.median(long) * 1000, "ms")
    report("open_2000_vs_10_ratio", statistics.median(long) / statistics.median(short), "x")

    ours_server.shutdown()
    base_server.shutdown()
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
