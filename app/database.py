"""Engine settings that depend on the database (SQLite gets WAL, foreign keys, a busy timeout and secure
delete), and the purge steps: what else each area deletes with a conversation or a user, and what each
store does once a purge that touched it is committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app, has_app_context
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

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
