"""Skilldesk served on 127.0.0.1 for the clients of other tools (the openai SDK, pydantic-ai, the MCP SDK)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from werkzeug.serving import make_server

from app import create_app
from app.api.tokens import create_token
from app.extensions import db
from app.models import User


class Served:
    """An app of the test database served by werkzeug in a thread, as a client on the network reaches it."""

    def __init__(self, settings: dict) -> None:
        self.app = create_app(settings)
        self._server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="served", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
        with self.app.app_context():
            db.engine.dispose()


@pytest.fixture
def served(app, settings) -> Iterator[Served]:
    """Skilldesk on a free port of 127.0.0.1 (its database is the test's: `app` empties it afterwards)."""
    server = Served({**settings, "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"})
    yield server
    server.stop()


def token_for(app, user_id: int, scopes=("openai", "mcp"), agents=None, rate_limit=None, days: int = 30) -> str:
    """Create a token for the user; return its secret."""
    with app.app_context():
        user = db.session.get(User, user_id)
        chosen = None if agents is None else [db.session.merge(agent) for agent in agents]
        _token, secret = create_token(user, "Tool", list(scopes), days, agents=chosen, rate_limit=rate_limit)
        db.session.commit()
        return secret


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}
