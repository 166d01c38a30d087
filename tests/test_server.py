"""The production server as `make run` starts it: gunicorn's threaded workers, and Ctrl+C during a run."""

from __future__ import annotations

import re
import sqlite3

import httpx
import pytest

from app.extensions import db
from app.models import Message, ModelConfig, Run
from tests.conftest import PASSWORD, make_agent, make_user
from tests.fake_openai import fake_openai
from tests.server_process import answering, app_on, ctrl_c, free_port, instance, press_ctrl_c, start, stop, wait_for

pytestmark = [pytest.mark.once, pytest.mark.filterwarnings("ignore::ResourceWarning")]


def _a_run_on_a_hanging_model(tmp_path, provider):
    """Serve a fresh instance, send a message to an agent on the hanging model; wait for its model request."""
    env = instance(tmp_path, SKILLDESK_OUTBOUND_ALLOWED_HOSTS="127.0.0.1")  # the admin allows the local model
    app = app_on(env)
    with app.app_context():
        user = make_user()
        config = ModelConfig(name="Slow local", provider="openai-compatible", model_name="fake",
                             base_url=provider.base_url, context_window=8192, timeout=300, profiles={})
        db.session.add(config)
        db.session.flush()
        agent_id, email = make_agent(model_config_id=config.id).id, user.email
        db.engine.dispose()
    port, log = free_port(), tmp_path / "serve.log"
    server = start(f".venv/bin/flask --app wsgi serve --port {port}", env, log)
    base = f"http://127.0.0.1:{port}"
    wait_for(answering(f"{base}/login"), "the server's first answer", process=server, log=log)
    assert "gunicorn" in log.read_text() and "Using worker: app.server.Worker" in log.read_text()
    with httpx.Client(base_url=base) as browser:
        assert browser.post("/login", data={"email": email, "password": PASSWORD}).status_code == 302
        chat = browser.post("/chat/", data={"agent_id": agent_id})
        conversation_id = int(re.search(r"/chat/(\d+)", chat.headers["location"]).group(1))
        sent = browser.post(f"/chat/{conversation_id}/messages", data={"text": "Tell me a long story"})
        assert sent.status_code == 302, sent.text
    wait_for(lambda: provider.requests, "the run's model request", process=server, log=log)
    return app, env, server, log, conversation_id


def _assert_interrupted_and_kept(app, conversation_id: int) -> None:
    with app.app_context():
        run = db.session.scalar(db.select(Run).where(Run.conversation_id == conversation_id))
        messages = {m.role: m for m in db.session.scalars(db.select(Message).where(
            Message.conversation_id == conversation_id))}
        assert run.status == "interrupted" and "The server stopped" in run.error
        assert messages["user"].content == "Tell me a long story"
        assert messages["assistant"].meta["status"] == "interrupted"
        db.engine.dispose()


def test_ctrl_c_during_a_run_marks_it_interrupted_and_keeps_the_message(tmp_path):
    with fake_openai("hang") as provider:
        app, _env, server, log, conversation_id = _a_run_on_a_hanging_model(tmp_path, provider)
        try:
            assert ctrl_c(server) == 0, log.read_text()
        finally:
            stop(server)
    _assert_interrupted_and_kept(app, conversation_id)


def test_a_second_ctrl_c_while_the_worker_stores_its_runs_does_not_cut_it_short(tmp_path):
    """The worker is exiting and waits for its interrupted runs to be stored; another stop signal (a second
    Ctrl+C, or the master's SIGQUIT reaching a busy worker late) must not end that wait with runs left running."""
    with fake_openai("hang") as provider:
        app, env, server, log, conversation_id = _a_run_on_a_hanging_model(tmp_path, provider)
        # Hold the database's write lock, so the interrupted run cannot store its end before the second Ctrl+C.
        holder = sqlite3.connect(env["DATABASE_URL"].removeprefix("sqlite:///"), isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            press_ctrl_c(server)
            wait_for(lambda: "is storing the runs it interrupted" in log.read_text(), "the worker's exit",
                     process=server, log=log)
            press_ctrl_c(server)
            holder.execute("ROLLBACK")
            assert server.wait(60) == 0, log.read_text()
        finally:
            holder.close()
            stop(server)
    _assert_interrupted_and_kept(app, conversation_id)


def test_database_max_connections_caps_what_one_process_opens(settings):
    """Several workers share PostgreSQL's max_connections: past the cap a thread waits, it does not connect."""
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    from app import create_app

    app = create_app({**settings, "DATABASE_MAX_CONNECTIONS": 3})
    app.config["SQLALCHEMY_ENGINE_OPTIONS"]["pool_timeout"] = 0.1
    with app.app_context():
        held = [db.engine.connect() for _ in range(3)]
        with pytest.raises(PoolTimeout):
            db.engine.connect()
        held.pop().close()
        held.append(db.engine.connect())  # a connection given back is the next thread's
        for connection in held:
            connection.close()
        db.engine.dispose()
