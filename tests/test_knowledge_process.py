"""`flask serve` as it runs by default: one web worker per core and one knowledge process beside them.

The web workers never load torch nor open the embedded Chroma store: a memory stored in one chat and
found from another goes through the knowledge process, which is the only process that maps them.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from app.extensions import db
from app.models import Agent, Run
from tests.conftest import PASSWORD, make_user
from tests.server_process import answering, app_on, ctrl_c, free_port, instance, start, stop, wait_for

pytestmark = [pytest.mark.once, pytest.mark.filterwarnings("ignore::ResourceWarning")]


def _children(pid: int) -> list[int]:
    return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()]


def _maps(pid: int, library: str) -> bool:
    return library in Path(f"/proc/{pid}/maps").read_text()


def _chat(browser: httpx.Client, agent_id: int, text: str) -> str:
    """Start a chat, send `text`, read the run's stream to its end; return the end event's data."""
    chat = browser.post("/chat/", data={"agent_id": agent_id})
    conversation_id = int(re.search(r"/chat/(\d+)", chat.headers["location"]).group(1))
    sent = browser.post(f"/chat/{conversation_id}/messages", data={"text": text}, headers={"HX-Request": "true"})
    assert sent.status_code == 200, sent.text
    run_id = re.search(r'data-run="([0-9a-f]+)"', sent.text).group(1)
    with browser.stream("GET", f"/runs/{run_id}/events", headers={"HX-Request": "true"}) as stream:
        ended, data = False, []
        for line in stream.iter_lines():
            if line == "event: end":
                ended = True
            elif ended and line.startswith("data:"):
                data.append(line)
            elif ended and not line:
                break
    assert ended, f"run {run_id}: the stream closed before its end event"
    return "".join(data)


def test_web_workers_ask_the_knowledge_process_and_never_load_the_model(tmp_path):
    env = instance(tmp_path)
    app = app_on(env)
    with app.app_context():
        email = make_user().email
        agent = Agent(name="Remembers", instructions="Remember what you are told.", roles=["user", "admin"],
                      skills=[{"name": "memory", "config": {}}], max_requests=5)
        db.session.add(agent)
        db.session.commit()
        agent_id = agent.id
        db.engine.dispose()
    port, log = free_port(), tmp_path / "serve.log"
    server = start(f".venv/bin/flask --app wsgi serve --port {port} --workers 2", env, log)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(answering(f"{base}/login"), "the server's first answer", process=server, log=log)
        assert "with 2 worker(s)" in log.read_text() and "Spawned dirty arbiter" in log.read_text()
        with httpx.Client(base_url=base, timeout=180) as browser:
            assert browser.post("/login", data={"email": email, "password": PASSWORD}).status_code == 302
            stored = _chat(browser, agent_id, "Store in memory: the team offsite is in Lisbon in May.")
            found = _chat(browser, agent_id, "Search memory: where is the team offsite?")
        assert "Remembered" in stored, stored[:500]
        assert "Lisbon" in found, found[:500]
        # The master's children: the web workers, and the dirty arbiter whose child is the knowledge process.
        workers = [pid for pid in _children(server.pid) if not _children(pid)]
        knowledge = [child for pid in _children(server.pid) for child in _children(pid)]
        assert len(workers) == 2 and len(knowledge) == 1
        for worker in workers:
            assert not _maps(worker, "libtorch"), f"web worker {worker} loaded torch"
            assert not _maps(worker, "chromadb_rust_bindings"), f"web worker {worker} opened Chroma"
        assert _maps(knowledge[0], "libtorch") and _maps(knowledge[0], "chromadb_rust_bindings")
        assert ctrl_c(server) == 0, log.read_text()
    finally:
        stop(server)
    with app.app_context():
        assert set(db.session.scalars(db.select(Run.status))) == {"succeeded"}
        db.engine.dispose()
