"""Disposable databases: a fresh SQLite file migrated once per evaluation run and copied for each case.

A case runs in a second Flask app built by the same factory, on its own copy of the migrated template,
so it runs the real runtime turn (the chat's code path) and nothing it does reaches the real database.
An evaluation run builds one such app per kind it needs (with or without the pages and the API; with or
without 127.0.0.1 allowed for the outbound guard) and keeps it for the run: building the pages' routes,
SQL statements and templates again for every case would cost more than most cases. Before each case the
app's engine is disposed of and its database file replaced by a fresh copy of the template; after it,
the file, the case's vector store and its jobs are deleted.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import flask_migrate
from flask import Flask

from app.extensions import db

DATABASE = "case.sqlite3"
LEFTOVERS = (f"{DATABASE}-wal", f"{DATABASE}-shm", "jobs.sqlite3", "jobs.sqlite3-wal", "jobs.sqlite3-shm")


def _config(folder: Path, database: Path, secret: str, allow_local: bool = False) -> dict:
    local = {"OUTBOUND_ALLOWED_HOSTS": ["127.0.0.1"]} if allow_local else {}
    return {
        **local,
        "SECRET_KEY": secret,
        "SQLALCHEMY_DATABASE_URI": f"sqlite:///{database}",
        "DATABASE_URL": None,
        "REDIS_URL": None,
        "JOBS_IMMEDIATE": True,
        "JOBS_SQLITE_PATH": str(folder / "jobs.sqlite3"),
        "CHROMA_PATH": str(folder / "chroma"),
        "SERVER_NAME": None,
        "WTF_CSRF_ENABLED": False,
    }


def _build(factory: Callable[..., Flask], folder: Path, database: Path, secret: str, allow_local: bool = False,
           views: bool = False) -> Flask:
    return factory(_config(folder, database, secret, allow_local), views=views)


@dataclass
class _CaseApp:
    app: Flask
    folder: Path

    @property
    def database(self) -> Path:
        return self.folder / DATABASE


class Sandbox:
    """A folder holding the migrated template database of one evaluation run, and the run's case apps."""

    def __init__(self, app: Flask) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="skilldesk-eval-"))
        self.template = self.folder / "template.sqlite3"
        # The app's own factory (given to evals.init_app) builds each case's app: one more app of the same code.
        self.factory = app.extensions["evals.factory"]
        self.secret = app.config["SECRET_KEY"]
        self._apps: dict[tuple[bool, bool], _CaseApp] = {}
        template = _build(self.factory, self.folder, self.template, self.secret)
        with template.app_context():
            flask_migrate.upgrade()
            db.engine.dispose()

    def _app(self, allow_local: bool, views: bool) -> _CaseApp:
        kind = (allow_local, views)
        if kind not in self._apps:
            folder = Path(tempfile.mkdtemp(prefix=f"app-{'local-' if allow_local else ''}"
                                                  f"{'views-' if views else ''}", dir=self.folder))
            self._apps[kind] = _CaseApp(_build(self.factory, folder, folder / DATABASE, self.secret, allow_local,
                                               views), folder)
        return self._apps[kind]

    @contextmanager
    def case(self, name: str, allow_local: bool = False, views: bool = False) -> Iterator[Flask]:
        """Yield an app on a fresh copy of the template; delete the copy and what the case left afterwards.

        `allow_local` lets the app's outbound guard reach 127.0.0.1 (the scripted server and the case's
        pages), in this disposable app only; `views` registers the pages and the API, for a case that goes
        through a client. `name` is the case's, for the logs.
        """
        case_app = self._app(allow_local, views)
        _clear(case_app)
        shutil.copyfile(self.template, case_app.database)
        try:
            yield case_app.app
        finally:
            _clear(case_app)

    def close(self) -> None:
        """Delete the template and every case's leftovers."""
        for case_app in self._apps.values():
            _clear(case_app)
        self._apps.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def _clear(case_app: _CaseApp) -> None:
    """Close the app's connections and vector store, and delete its database, jobs and vectors."""
    with case_app.app.app_context():
        db.session.remove()
        db.engine.dispose()
    chroma = case_app.folder / "chroma"
    if chroma.exists():
        # Imported only when a case used vectors: chromadb costs ~0.5 s to import.
        from app.knowledge.vectors import close_client

        close_client(chroma)
        shutil.rmtree(chroma, ignore_errors=True)
    for name in (DATABASE, *LEFTOVERS):
        (case_app.folder / name).unlink(missing_ok=True)
