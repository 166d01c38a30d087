"""Engine settings that depend on the database (SQLite gets WAL, foreign keys and a busy timeout), and the
purge steps: what else each area deletes with a conversation or a user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from sqlalchemy import event
from sqlalchemy.engine import Engine

from app.extensions import db


@dataclass
class PurgeSteps:
    """What else to delete with a conversation or a user; each area adds its steps in its `init_app`."""

    conversation: list[Callable[[Any], None]] = field(default_factory=list)
    user: list[Callable[[Any], None]] = field(default_factory=list)


def purge_steps(app: Flask) -> PurgeSteps:
    """Return the app's purge steps (kept in `app.extensions["purge_steps"]`)."""
    return app.extensions.setdefault("purge_steps", PurgeSteps())


def init_app(app: Flask) -> None:
    purge_steps(app)
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
