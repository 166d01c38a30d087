"""Disposable databases: a fresh SQLite file migrated once per evaluation run and copied for each case.

A case's app is a second Flask app built by the same factory on its copy, so the case runs the real
runtime turn (the chat's code path) and nothing it does reaches the real database: the copy and
its folder are deleted when the case ends.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import flask_migrate
from flask import Flask

from app.extensions import db


def _config(folder: Path, database: Path, secret: str) -> dict:
    return {
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


def _build(factory: Callable[..., Flask], folder: Path, database: Path, secret: str) -> Flask:
    return factory(_config(folder, database, secret), views=False)


class Sandbox:
    """A folder holding the migrated template database of one evaluation run."""

    def __init__(self, app: Flask) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="skilldesk-eval-"))
        self.template = self.folder / "template.sqlite3"
        # The app's own factory (given to evals.init_app) builds each case's app: one more app of the same code.
        self.factory = app.extensions["evals.factory"]
        self.secret = app.config["SECRET_KEY"]
        template = _build(self.factory, self.folder, self.template, self.secret)
        with template.app_context():
            flask_migrate.upgrade()
            db.engine.dispose()

    @contextmanager
    def case(self, name: str) -> Iterator[Flask]:
        """Yield an app on a fresh copy of the template; delete the copy afterwards."""
        folder = Path(tempfile.mkdtemp(prefix=f"case-{name[:20]}-", dir=self.folder))
        database = folder / "case.sqlite3"
        shutil.copyfile(self.template, database)
        app = _build(self.factory, folder, database, self.secret)
        try:
            yield app
        finally:
            with app.app_context():
                db.session.remove()
                db.engine.dispose()
            if (folder / "chroma").exists():
                # Imported only when a case used vectors: chromadb costs ~0.5 s to import.
                from app.knowledge.vectors import close_client

                close_client(folder / "chroma")
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        """Delete the template and every case's leftovers."""
        shutil.rmtree(self.folder, ignore_errors=True)
