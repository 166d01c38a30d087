"""Engine settings that depend on the database: SQLite gets WAL, foreign keys, a busy timeout and secure delete."""

from __future__ import annotations

import logging

from flask import Flask
from sqlalchemy import event
from sqlalchemy.engine import Engine

from app.extensions import db

log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    with app.app_context():
        engine = db.engine
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    # Deleted rows are overwritten with zeros, not left in free pages (whatever the build's default).
    cursor.execute("PRAGMA secure_delete=ON")
    cursor.close()


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
            connection.exec_driver_sql("PRAGMA busy_timeout=10000")
    if busy:
        log.warning("the WAL checkpoint after a purge could not finish: a reader holds an older snapshot")
