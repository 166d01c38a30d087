"""Engine settings that depend on the database (SQLite gets WAL, foreign keys, a busy timeout, secure
delete and one writer at a time), and the purge steps: what else each area deletes with a conversation or
a user, and what each store does once a purge that touched it is committed.

SQLite takes one writer at a time. A transaction that read first and writes later (pysqlite's deferred
BEGIN) can fail at once with "database is locked" when another writer committed in between, whatever the
busy timeout; under a burst of sends that was a 500. So every write transaction here starts with
`BEGIN IMMEDIATE` before its first write, after taking this process's write turn (a FIFO lock, so the
threads of one process queue instead of sleeping in SQLite's busy handler); other processes wait in the
busy handler. A write that cannot start within DATABASE_WRITE_TIMEOUT_SECONDS raises `WriteTimeout`, a 503
with Retry-After, before anything of it is written.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app, has_app_context
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from werkzeug.exceptions import ServiceUnavailable

from app.extensions import db

log = logging.getLogger(__name__)


@dataclass
class PurgeSteps:
    """What else to delete with a conversation or a user, and what a store does after a purge's commit.

    Each area adds its steps in its `init_app`; the state lives in `app.extensions["purge_steps"]`.
    """

    conversation: list[Callable[[Any], None]] = field(default_factory=list)
    user: list[Callable[[Any], None]] = field(default_factory=list)
    # By store name ("database", "vectors"): run once a transaction that purged text from it is committed.
    after_commit: dict[str, Callable[[], None]] = field(default_factory=dict)


def purge_steps(app: Flask) -> PurgeSteps:
    """Return the app's purge steps."""
    return app.extensions.setdefault("purge_steps", PurgeSteps())


def mark_purged(*stores: str) -> None:
    """Note that this transaction purges text from these stores (default: the database)."""
    db.session.info.setdefault("purged", set()).update(stores or ("database",))


def _after_purge(session: Session) -> None:
    stores = sorted(session.info.pop("purged", ()))
    if not stores or not has_app_context():
        return
    steps = purge_steps(current_app).after_commit
    for store in stores:
        step = steps.get(store)
        if step is not None:
            step()


def _purge_rolled_back(session: Session, _previous) -> None:
    session.info.pop("purged", None)


def init_app(app: Flask) -> None:
    purge_steps(app).after_commit["database"] = checkpoint_wal
    # Session-wide listeners, added once per process (every app's sessions are Sessions).
    if not event.contains(Session, "after_commit", _after_purge):
        event.listen(Session, "after_commit", _after_purge)
        event.listen(Session, "after_soft_rollback", _purge_rolled_back)
    with app.app_context():
        engine = db.engine
    if engine.dialect.name == "sqlite":
        writes = app.extensions["sqlite_writes"] = SqliteWrites(float(app.config["DATABASE_WRITE_TIMEOUT_SECONDS"]))
        event.listen(engine, "connect", writes.connected)
        event.listen(engine, "before_cursor_execute", writes.before_execute)
        event.listen(engine, "commit", writes.on_commit)
        event.listen(engine, "rollback", writes.on_rollback)
        event.listen(engine.pool, "reset", writes.on_reset)
        event.listen(engine.pool, "checkin", writes.released)
        event.listen(engine.pool, "close", writes.released)
        event.listen(engine.pool, "invalidate", writes.on_invalidate)
        event.listen(engine.pool, "soft_invalidate", writes.on_invalidate)


RETRY_AFTER_SECONDS = 5


class WriteTimeout(ServiceUnavailable):
    """The database could not take this write in time (SQLite's one writer was busy): nothing was written."""

    def __init__(self) -> None:
        super().__init__("The server is saving as much as it can right now; nothing was saved. "
                         f"Try again in {RETRY_AFTER_SECONDS} seconds.", retry_after=RETRY_AFTER_SECONDS)


def is_locked(error: BaseException) -> bool:
    """Tell whether a database error is SQLite's "database is locked" (or busy)."""
    original = getattr(error, "orig", error)
    return isinstance(original, sqlite3.OperationalError) and ("locked" in str(original) or "busy" in str(original))


class WriteTurns:
    """A FIFO lock: the waiting threads get the write turn in the order they asked for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._waiting: deque[threading.Lock] = deque()
        self._held = False

    def acquire(self, timeout: float) -> bool:
        with self._guard:
            if not self._held:
                self._held = True
                return True
            mine = threading.Lock()
            mine.acquire()
            self._waiting.append(mine)
        if mine.acquire(timeout=timeout):
            return True  # handed over by release()
        with self._guard:
            try:
                self._waiting.remove(mine)
            except ValueError:
                return True  # handed over just as the wait ran out
            return False

    def release(self) -> None:
        with self._guard:
            if self._waiting:
                self._waiting.popleft().release()  # the turn passes on without being free in between
            else:
                self._held = False


_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class SqliteWrites:
    """Pragmas once per new connection, and `BEGIN IMMEDIATE` in this process's write turn before a first write."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.turns = WriteTurns()

    def connected(self, dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        # Deleted rows are overwritten with zeros, not left in free pages (whatever the build's default).
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.close()

    def before_execute(self, connection, cursor, statement: str, _parameters, context, _executemany) -> None:
        dbapi_connection = cursor.connection
        if dbapi_connection.in_transaction or dbapi_connection.isolation_level is None \
                or not _is_write(statement, context):
            return  # already writing, in the driver's autocommit mode (each statement its own), or a read
        self.start(connection, dbapi_connection)

    def start(self, connection, dbapi_connection) -> None:
        """Take this process's write turn and `BEGIN IMMEDIATE`, or raise `WriteTimeout` having written nothing."""
        started = time.monotonic()
        if not self.turns.acquire(self.timeout):
            raise WriteTimeout()
        try:
            # The busy timeout bounds the wait for other processes' writers; ours waited in the turns.
            waited = time.monotonic() - started
            if waited > 0.1:
                dbapi_connection.execute(f"PRAGMA busy_timeout={int(max(0.0, self.timeout - waited) * 1000)}")
            dbapi_connection.execute("BEGIN IMMEDIATE")
            if waited > 0.1:
                dbapi_connection.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        except sqlite3.OperationalError as error:
            self.turns.release()
            if is_locked(error):
                raise WriteTimeout() from error
            raise
        connection.info["write_turn"] = self.turns

    def on_commit(self, connection) -> None:
        # The event comes before the driver's commit: commit here, so the turn passes on only once the
        # write is in the database (the driver's own commit then finds nothing to do).
        self._end(connection, "commit")

    def on_rollback(self, connection) -> None:
        self._end(connection, "rollback")

    def _end(self, connection, how: str) -> None:
        turns = connection.info.pop("write_turn", None)
        if turns is not None:
            try:
                getattr(connection.connection.dbapi_connection, how)()
            finally:
                turns.release()

    def on_reset(self, dbapi_connection, record, _reset_state) -> None:
        self.released(dbapi_connection, record)

    def on_invalidate(self, dbapi_connection, record, _exception) -> None:
        self.released(dbapi_connection, record)

    def released(self, dbapi_connection, record) -> None:
        """The connection went back to the pool (or away): its transaction is over, the next writer's turn."""
        info = getattr(record, "info", None)
        turns = info.pop("write_turn", None) if info is not None else None
        if turns is not None:
            if dbapi_connection is not None and dbapi_connection.in_transaction:
                dbapi_connection.rollback()  # a write the session never committed: undone before the next one
            turns.release()


def _is_write(statement: str, context) -> bool:
    if context is not None and (context.isinsert or context.isupdate or context.isdelete):
        return True
    return statement.lstrip()[:7].upper().startswith(_WRITES)


def begin_write() -> None:
    """Start the session's transaction as a write now: on SQLite, take the write turn before anything is done.

    For a caller that must not be cut short half-way (a run storing its end): a `WriteTimeout` raised here
    comes before any of its work, so it can simply try again.
    """
    writes: SqliteWrites | None = current_app.extensions.get("sqlite_writes")
    if writes is None:
        return
    connection = db.session.connection()
    dbapi_connection = connection.connection.dbapi_connection
    if not dbapi_connection.in_transaction:
        writes.start(connection, dbapi_connection)


# Tries at a write that must not be given up (a run's end) while SQLite's writer stays busy past its timeout.
WRITE_ATTEMPTS = 6


async def in_write_turn(app: Flask, work: Callable[..., Any], *args: Any) -> Any:
    """Run `work(*args)` in an app context whose transaction took the write turn first (`begin_write`); while
    the database cannot take the write in time, wait (without blocking the loop) and try again."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            with app.app_context():
                begin_write()  # a WriteTimeout here comes before any of the work
                return work(*args)
        except WriteTimeout:
            if attempt + 1 == WRITE_ATTEMPTS:
                raise
            log.warning("waiting for the database to store %s", getattr(work, "__name__", "a write"))
            await asyncio.sleep(0.1 * 2 ** min(attempt, 4))
    raise AssertionError("unreachable")


def is_sqlite(engine: Engine | None = None) -> bool:
    """Tell whether the app's database is SQLite."""
    return (engine or db.engine).dialect.name == "sqlite"


def commit_keeping_loaded() -> None:
    """Commit without expiring the session's objects, for a view that renders them right after.

    A plain commit expires every loaded object, so each one would be read again by the render.
    Use it only where nothing else can have changed those rows in between.
    """
    session = db.session()
    previous, session.expire_on_commit = session.expire_on_commit, False
    try:
        session.commit()
    finally:
        session.expire_on_commit = previous


def checkpoint_wal() -> None:
    """On SQLite, copy the WAL into the database file and truncate it, so deleted rows keep no copy there.

    WAL mode appends every changed page to `-wal`: the text of a deleted row stays in the older frames
    until a checkpoint. TRUNCATE waits (a second at most) for readers of older snapshots; when one
    holds on, the frames stay until the next purge's checkpoint or SQLite's own, and it is logged.
    """
    if not is_sqlite():
        return
    with db.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA busy_timeout=1000")
        try:
            busy, _frames, _copied = connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
        finally:
            timeout = float(current_app.config["DATABASE_WRITE_TIMEOUT_SECONDS"])
            connection.exec_driver_sql(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    if busy:
        log.warning("the WAL checkpoint after a purge could not finish: a reader holds an older snapshot")


def taken(column: Any, value: Any, own_id: int | None = None) -> bool:
    """Tell whether a row other than `own_id` holds `value` in the unique `column`: every uniqueness check's query."""
    model = column.class_
    query = db.select(model.id).where(column == value)
    if own_id:
        query = query.where(model.id != own_id)
    return db.session.scalar(query.limit(1)) is not None


def name_clash(column: Any, value: Any, own_id: int | None, what: str) -> str | None:
    """The one error of a unique name (agents, model configurations, knowledge bases): None when `value` is free."""
    return f"Another {what} already has this name." if taken(column, value, own_id) else None
