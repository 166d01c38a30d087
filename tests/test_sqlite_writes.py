"""SQLite's one writer: a burst of concurrent writes never fails with "database is locked"; a write that
cannot be made in time is answered 503 with Retry-After and stores nothing."""

from __future__ import annotations

import os
import sqlite3
import threading

import pytest

from app import create_app
from app.database import WriteTimeout
from app.extensions import db
from app.models import Message, Run, User
from tests.chat_driver import start_chat

HX = {"HX-Request": "true"}

DATABASE_URL = os.environ.get("SKILLDESK_TEST_DATABASE_URL") or "sqlite"
pytestmark = pytest.mark.skipif(not DATABASE_URL.startswith("sqlite"),
                                reason="SQLite's one writer (the run is on SKILLDESK_TEST_DATABASE_URL)")


def _database_file(app) -> str:
    return app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///")


def test_concurrent_transactions_that_read_then_write_all_commit(app):
    """Each transaction reads, writes, reads again and writes once more: the pattern a deferred BEGIN lets
    fail at once when another writer commits in between. 24 threads, 10 transactions each: all 240 kept."""
    failures: list[BaseException] = []
    start = threading.Barrier(24)

    def writer(n: int) -> None:
        try:
            start.wait()
            for i in range(10):
                with app.app_context():
                    db.session.scalar(db.select(db.func.count()).select_from(User))
                    user = User(email=f"writer-{n}-{i}@example.org", name="new", role="user", active=True,
                                preferences={}, password_hash="x")
                    db.session.add(user)
                    db.session.flush()
                    db.session.scalar(db.select(db.func.count()).select_from(User))
                    db.session.execute(db.update(User).where(User.id == user.id).values(name=f"writer {n} {i}"))
                    db.session.commit()
        except BaseException as error:  # collected for the assertion
            failures.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with app.app_context():
        names = set(db.session.scalars(db.select(User.name).where(User.email.like("writer-%"))))
    assert names == {f"writer {n} {i}" for n in range(24) for i in range(10)}


@pytest.fixture
def quick_app(settings, app):
    """The same database, with a write timeout short enough for a test that holds the lock on purpose."""
    other = create_app({**settings, "DATABASE_WRITE_TIMEOUT_SECONDS": 0.2})
    yield other
    with other.app_context():
        db.session.remove()
        db.engine.dispose()


def test_a_write_that_cannot_start_in_time_raises_write_timeout_and_writes_nothing(quick_app):
    holder = sqlite3.connect(_database_file(quick_app), isolation_level=None)  # another process's writer
    try:
        holder.execute("BEGIN IMMEDIATE")
        with quick_app.app_context():
            db.session.add(User(email="late@example.org", name="Late", role="user", active=True,
                                preferences={}, password_hash="x"))
            with pytest.raises(WriteTimeout) as raised:
                db.session.commit()
            assert raised.value.code == 503
            db.session.rollback()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with quick_app.app_context():
        assert db.session.scalar(db.select(User.id).where(User.email == "late@example.org")) is None


def test_a_send_while_the_database_cannot_take_it_is_503_with_retry_after_and_nothing_stored(quick_app):
    from tests.conftest import AuthActions

    client = quick_app.test_client()
    AuthActions(quick_app, client).login_as("user")
    conversation_id = start_chat(quick_app, client)
    holder = sqlite3.connect(_database_file(quick_app), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        response = client.post(f"/chat/{conversation_id}/messages", data={"text": "Are you there?"}, headers=HX)
        api = client.post(f"/chat/{conversation_id}/messages", data={"text": "Are you there?"},
                          headers={"Accept": "application/json"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    # An alert beside the page: the composer, and the text in it, stay as they were.
    assert response.headers["HX-Retarget"] == "#alerts" and 'id="composer"' not in response.text
    assert "nothing was saved" in response.text
    assert api.status_code == 503 and api.headers["Retry-After"] == "5" and api.get_json()["error"] == "busy"
    with quick_app.app_context():
        assert db.session.scalar(db.select(db.func.count()).select_from(Message)
                                 .where(Message.conversation_id == conversation_id)) == 0
        assert db.session.scalar(db.select(db.func.count()).select_from(Run)
                                 .where(Run.conversation_id == conversation_id)) == 0
    # Once the writer is gone the same send goes through.
    assert client.post(f"/chat/{conversation_id}/messages", data={"text": "Are you there?"},
                       headers=HX).status_code == 200


def test_a_run_whose_end_cannot_be_stored_in_time_waits_and_stores_it(quick_app, scripted_model, caplog):
    """SQLite's writer busy past the timeout as a run ends: the run tries again, never stays `running`."""
    import asyncio
    import logging

    from app.runtime import execution
    from tests.chat_driver import chat_model, send, until
    from tests.conftest import AuthActions

    release = threading.Event()

    async def answer(messages, info):
        yield "Nearly "
        while not release.is_set():
            await asyncio.sleep(0.01)
        yield "done."

    client = quick_app.test_client()
    AuthActions(quick_app, client).login_as("user")
    conversation_id = start_chat(quick_app, client, model_config_id=chat_model(scripted_model, answer))
    run_id = send(quick_app, client, conversation_id, "Hello", wait=False)
    holder = sqlite3.connect(_database_file(quick_app), isolation_level=None)
    caplog.set_level(logging.WARNING, logger="app.database")
    try:
        holder.execute("BEGIN IMMEDIATE")
        release.set()
        assert until(lambda: any("waiting for the database to store _finish" in r.message for r in caplog.records))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    execution.wait(run_id)
    with quick_app.app_context():
        run = db.session.get(Run, run_id)
        assert run.status == "succeeded"
        answer_text = db.session.scalar(db.select(Message.content).where(Message.run_id == run_id,
                                                                          Message.role == "assistant"))
        assert answer_text == "Nearly done."
