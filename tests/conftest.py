"""Shared fixtures: app, client, runner, auth, users, and scripted models (the only fake: the LLM).

The database is migrated once per run (SQLite in a temporary folder, or PostgreSQL when
SKILLDESK_TEST_DATABASE_URL is set) and emptied after every test.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import flask_migrate
import pydantic_ai.models
import pytest
from flask import Flask
from flask.testing import FlaskClient
from pydantic_ai.models.function import FunctionModel
from sqlalchemy import inspect, text
from werkzeug.security import generate_password_hash

from app import create_app
from app.extensions import db
from app.models import Agent, ModelConfig, User
from app.runtime import execution, providers
from app.seed import ensure_defaults

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

PASSWORD = "correct horse battery"
_counter = itertools.count(1)


def _test_database_url(tmp_root) -> str:
    url = os.environ.get("SKILLDESK_TEST_DATABASE_URL")
    return url or f"sqlite:///{tmp_root / 'test.sqlite3'}"


@pytest.fixture(scope="session")
def settings(tmp_path_factory) -> dict:
    """Configuration every test app gets."""
    root = tmp_path_factory.mktemp("skilldesk")
    from app.config import database_uri

    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "SQLALCHEMY_DATABASE_URI": database_uri(_test_database_url(root), root),
        "JOBS_IMMEDIATE": True,
        "WTF_CSRF_ENABLED": False,
        "JOBS_SQLITE_PATH": str(root / "jobs.sqlite3"),
        "CHROMA_PATH": str(root / "chroma"),
        "SERVER_NAME": None,
    }


@pytest.fixture(scope="session")
def _database(settings) -> Iterator[None]:
    """Start from an empty database and apply every migration once."""
    app = create_app(settings)
    with app.app_context():
        _drop_everything()
        flask_migrate.upgrade()
    yield
    with app.app_context():
        db.engine.dispose()


def _drop_everything() -> None:
    inspector = inspect(db.engine)
    with db.engine.begin() as connection:
        if db.engine.dialect.name == "postgresql":
            for table in inspector.get_table_names():
                connection.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
        else:
            connection.execute(text("PRAGMA foreign_keys=OFF"))
            for table in inspector.get_table_names():
                connection.execute(text(f'DROP TABLE IF EXISTS "{table}"'))


def _empty_tables() -> None:
    """Delete every row and drop tables created at run time (data tables), keeping the schema."""
    known = set(db.metadata.tables) | {"alembic_version"}
    inspector = inspect(db.engine)
    with db.engine.begin() as connection:
        for table in inspector.get_table_names():
            if table not in known and not table.startswith("knowledge_fts"):  # FTS5 index and its shadows
                connection.execute(text(f'DROP TABLE IF EXISTS "{table}"'))
        for table in reversed(db.metadata.sorted_tables):
            connection.execute(table.delete())


@pytest.fixture
def app(settings, _database) -> Iterator[Flask]:
    app = create_app(dict(settings))
    with app.app_context():
        ensure_defaults()
        db.session.commit()
    yield app
    _end_runs_still_going()
    with app.app_context():
        db.session.remove()
        _empty_tables()
        db.engine.dispose()  # each test app has its own engine: close its connections now


def _end_runs_still_going() -> None:
    """No run outlives its test: one still going is stopped (as a server shutdown stops it) and finishes
    writing before the tables are emptied and the engine closed. Otherwise it wrote into the next test's
    rows, or its connection outlived the engine and was closed by the garbage collector, whenever that
    came (a ResourceWarning, an error in whichever test it landed in)."""
    for future in execution.interrupt_all().values():
        with contextlib.suppress(Exception):  # its own test saw what mattered; here it only has to end
            future.result(timeout=10)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runner(app: Flask):
    return app.test_cli_runner()


def make_user(role: str = "user", name: str | None = None, email: str | None = None) -> User:
    """Create and commit a user (inside an app context)."""
    # Unique across module copies: `from tests.conftest import ...` loads this file a second time.
    n = f"{next(_counter)}-{uuid.uuid4().hex[:6]}"
    # Made like app.accounts.users.create_user does, but the suite signs in hundreds of times: a salted
    # one-round hash instead of scrypt, which costs ~0.2 s to make and again to check.
    user = User(email=(email or f"{role}{n}@example.org").strip().lower(), name=name or f"{role.title()} {n}",
                role=role, active=True, preferences={},
                password_hash=generate_password_hash(PASSWORD, method="pbkdf2:sha256:1"))
    db.session.add(user)
    db.session.commit()
    return user


class AuthActions:
    def __init__(self, app: Flask, client: FlaskClient) -> None:
        self._app = app
        self._client = client

    def create(self, role: str = "user", **kwargs) -> int:
        with self._app.app_context():
            return make_user(role, **kwargs).id

    def login(self, email: str, password: str = PASSWORD):
        return self._client.post("/login", data={"email": email, "password": password})

    def login_as(self, role: str = "user", **kwargs) -> int:
        """Create a user with that role and sign in; returns the user id."""
        with self._app.app_context():
            user = make_user(role, **kwargs)
            email, user_id = user.email, user.id
        response = self.login(email)
        assert response.status_code == 302, response.text
        return user_id

    def logout(self):
        return self._client.post("/logout")


@pytest.fixture
def auth(app: Flask, client: FlaskClient) -> AuthActions:
    return AuthActions(app, client)


@pytest.fixture
def csrf_app(app, settings) -> Iterator[Flask]:
    """The same database as `app`, with CSRF protection on as in production."""
    csrf_app = create_app({**settings, "WTF_CSRF_ENABLED": True})
    yield csrf_app
    with csrf_app.app_context():
        db.engine.dispose()  # close its pooled connections now, not when garbage collected


@pytest.fixture
def scripted_model(app: Flask) -> Iterator[Callable[..., int]]:
    """Register FunctionModels as a provider; returns a factory that makes a ModelConfig using one.

    `config_id = scripted_model(function=..., stream_function=...)`; point an agent at config_id.
    """
    names: list[str] = []

    def make(function=None, stream_function=None, context_window: int = 32_000, **model_kwargs) -> int:
        provider = f"scripted-{next(_counter)}-{uuid.uuid4().hex[:6]}"
        model = FunctionModel(function, stream_function=stream_function,
                              profile={"context_window": context_window}, **model_kwargs)
        providers.register_provider(provider, lambda _spec: model)
        names.append(provider)
        with app.app_context():
            config = ModelConfig(name=provider, provider=provider, model_name=provider,
                                 context_window=context_window, timeout=30, profiles={})
            db.session.add(config)
            db.session.commit()
            return config.id

    yield make
    for name in names:
        providers.register_provider(name, None)


def make_agent(name: str = "Helper", skills: list | None = None, model_config_id: int | None = None,
               roles: list | None = None, instructions: str = "Be helpful.", max_requests: int = 10) -> Agent:
    """Create and commit an agent (inside an app context)."""
    unique = f"{next(_counter)}{uuid.uuid4().hex[:4]}"
    agent = Agent(name=f"{name} {unique}", description="", instructions=instructions,
                  model_config_id=model_config_id, roles=roles or ["admin", "user"],
                  skills=skills if skills is not None else [], max_requests=max_requests)
    db.session.add(agent)
    db.session.commit()
    return agent


def pytest_collection_modifyitems(items) -> None:
    """Run the browser tests last: Playwright's sync API keeps an event loop running in the main thread
    for the rest of the session, and tests that call asyncio.run() cannot run after it starts."""
    items.sort(key=lambda item: "browser" in Path(str(item.path)).parts)
