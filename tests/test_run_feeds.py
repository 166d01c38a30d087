"""A run's followers in the writer's process get its events from memory; they read the database only when they
must (the replay, a wake-up from another process, an overflowed queue, a gap), and never miss an event."""

from __future__ import annotations

from contextlib import contextmanager

from sqlalchemy import event

from app.extensions import db
from app.models import Conversation, Run, RunEvent
from app.runtime import events as run_events
from app.runtime import feeds
from app.runtime.event_store import event_store
from tests.conftest import make_agent, make_user


def _a_running_run(app) -> str:
    with app.app_context():
        user, agent = make_user(), make_agent()
        conversation = Conversation(user_id=user.id, agent_id=agent.id)
        db.session.add(conversation)
        db.session.flush()
        run = Run(conversation_id=conversation.id, user_id=user.id, agent_id=agent.id, status="running")
        db.session.add(run)
        db.session.commit()
        return run.id


@contextmanager
def reads_of_run_events(app):
    """Count the statements that read run_events while the block runs."""
    reads: list[str] = []

    def count(_connection, _cursor, statement, *_args) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "run_events" in statement:
            reads.append(statement)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield reads
    finally:
        event.remove(engine, "before_cursor_execute", count)


def _next(app, follower, timeout: float = 0) -> list[feeds.StoredEvent]:
    with app.app_context():
        return follower.next(timeout)


def test_a_follower_gets_the_events_of_its_process_from_memory(app):
    run_id = _a_running_run(app)
    writer = run_events.EventWriter(app, run_id)
    with run_events.follow(app, run_id, 0) as follower:
        assert _next(app, follower) == []  # the replay: nothing stored yet
        for n in range(3):
            writer.emit("tool_call", {"id": f"call-{n}", "name": "look", "args": "{}"})
        assert event_store().settle(run_id)
        with reads_of_run_events(app) as reads:
            got = _next(app, follower)
        assert [(e.seq, e.data["id"]) for e in got] == [(1, "call-0"), (2, "call-1"), (3, "call-2")]
        assert reads == []  # handed over from memory, not read again


def test_a_follower_whose_queue_overflows_reads_the_database_and_misses_nothing(app):
    run_id = _a_running_run(app)
    writer = run_events.EventWriter(app, run_id)
    count = feeds.QUEUE_BOUND + 40
    with run_events.follow(app, run_id, 0) as follower:
        assert _next(app, follower) == []
        for n in range(count):  # a client that does not read meanwhile
            writer.emit("tool_call", {"id": f"call-{n}", "name": "look", "args": "{}"})
        assert event_store().settle(run_id)
        with reads_of_run_events(app) as reads:
            got = _next(app, follower)
        assert [e.seq for e in got] == list(range(1, count + 1))  # every event, in order, once
        assert len(reads) == 1  # the queue was dropped: one read of the database from where it was


def test_events_stored_by_another_process_are_read_once_per_wake_up(app):
    run_id = _a_running_run(app)
    with run_events.follow(app, run_id, 0) as follower:
        assert _next(app, follower) == []
        with app.app_context():  # another process stores three events and announces the newest
            db.session.execute(db.insert(RunEvent), [
                {"run_id": run_id, "seq": seq, "type": "text", "data": {"delta": f"{seq} "}} for seq in (1, 2, 3)])
            db.session.commit()
        run_events.deliver(f"e {run_id} 2")  # wake-ups of one batch, the second one naming the newest
        run_events.deliver(f"e {run_id} 3")
        with reads_of_run_events(app) as reads:
            got = _next(app, follower)
            again = _next(app, follower)
        assert [e.seq for e in got] == [1, 2, 3] and again == []
        assert len(reads) == 1


def test_a_gap_in_what_memory_brings_is_read_from_the_database(app):
    run_id = _a_running_run(app)
    with run_events.follow(app, run_id, 0) as follower:
        assert _next(app, follower) == []
        with app.app_context():
            db.session.execute(db.insert(RunEvent), [
                {"run_id": run_id, "seq": seq, "type": "text", "data": {"delta": f"{seq} "}} for seq in (1, 2)])
            db.session.commit()
        feeds.deliver(run_id, [feeds.StoredEvent(2, "text", {"delta": "2 "})])  # the first one never came
        got = _next(app, follower)
        assert [e.seq for e in got] == [1, 2]
