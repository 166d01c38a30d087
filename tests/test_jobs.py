"""Background jobs: the built-in ping job inline, on SQLite with a consumer thread, and on Redis."""

from __future__ import annotations

import logging
import os
import time
import uuid

import pytest
from huey import MemoryHuey, RedisHuey, SqliteHuey

from app import create_app
from app.extensions import db
from app.jobs import PING

REDIS_URL = os.environ.get("SKILLDESK_TEST_REDIS_URL")


def wait_for_pong(caplog, token: str, timeout: float = 60.0) -> str:
    """Wait until a consumer logged the job's answer (generously: a wait, never a speed test); return its line."""
    deadline = time.monotonic() + timeout
    while True:
        for record in caplog.records:
            if record.name == "app.jobs" and record.getMessage().startswith(f"ping {token} "):
                return record.getMessage()
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    raise AssertionError(f"no consumer answered the ping {token}")


def run_ping_on_a_consumer(app, caplog) -> str:
    """Queue the ping job on the app's huey and let a real consumer thread run it."""
    caplog.set_level(logging.INFO, logger="app.jobs")
    queue = app.extensions["jobs"]
    consumer = queue.consumer(workers=1)
    consumer.start()
    try:
        token = uuid.uuid4().hex
        with app.app_context():
            PING.delay(token)
        return wait_for_pong(caplog, token)
    finally:
        consumer.stop(graceful=True)
        with app.app_context():
            db.engine.dispose()


def test_ping_runs_inline_in_tests(app, caplog):
    caplog.set_level(logging.INFO, logger="app.jobs")
    huey = app.extensions["jobs"].huey
    assert isinstance(huey, MemoryHuey) and huey.immediate
    with app.app_context():
        PING.delay("inline")
    assert wait_for_pong(caplog, "inline", timeout=0) == "ping inline answered by app"
    with app.app_context():
        assert PING("direct") == "direct"  # a task is also a plain function


def test_ping_runs_on_sqlite_with_a_consumer_thread(settings, tmp_path, caplog):
    app = create_app({**settings, "JOBS_IMMEDIATE": False,
                      "JOBS_SQLITE_PATH": str(tmp_path / "jobs.sqlite3")})
    assert isinstance(app.extensions["jobs"].huey, SqliteHuey)
    assert run_ping_on_a_consumer(app, caplog).endswith("answered by app")


@pytest.mark.skipif(not REDIS_URL, reason="SKILLDESK_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379)")
def test_ping_runs_on_redis_with_a_consumer_thread(settings, caplog):
    app = create_app({**settings, "JOBS_IMMEDIATE": False, "REDIS_URL": REDIS_URL})
    assert isinstance(app.extensions["jobs"].huey, RedisHuey)
    assert run_ping_on_a_consumer(app, caplog).endswith("answered by app")


def test_every_declared_task_is_bound(app):
    tasks = app.extensions["jobs"].tasks
    assert {"ping", "generate_title"} <= set(tasks)
