"""Knowledge fixtures: one MiniLM model per test run, a real local embeddings server, a store in tmp_path."""

from __future__ import annotations

import json
import string
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from app.knowledge.embeddings import Embedder, embedder_from_config
from app.knowledge.support import SupportCheck
from app.knowledge.vectors import VectorStore, store_from_config


@dataclass
class Request:
    """One request the embeddings server received."""

    path: str
    headers: dict[str, str]
    body: dict


@dataclass
class EmbeddingsServer:
    """An OpenAI-compatible embeddings server on 127.0.0.1 that records what it was sent.

    `{url}/v1` answers like OpenAI (data deliberately out of order), `{url}/broken/v1` with a 500, and
    `{url}/odd/v1` with JSON in the wrong shape.
    """

    url: str
    requests: list[Request] = field(default_factory=list)
    dimensions: int = len(string.ascii_lowercase) + 1

    @staticmethod
    def vector(text: str) -> list[float]:
        """Embed as the server does: letter counts and a constant (equal texts, equal non-zero vectors)."""
        lowered = text.lower()
        return [float(lowered.count(letter)) for letter in string.ascii_lowercase] + [1.0]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.record.requests.append(Request(self.path, dict(self.headers), body))
        if self.path == "/v1/embeddings":
            data = [
                {"object": "embedding", "index": index, "embedding": EmbeddingsServer.vector(text)}
                for index, text in enumerate(body["input"])
            ]
            data.reverse()  # the API does not promise order; clients must sort by index
            self._reply(200, {"object": "list", "data": data, "model": body["model"]})
        elif self.path == "/broken/v1/embeddings":
            self._reply(500, {"error": {"message": "model not loaded"}})
        elif self.path == "/odd/v1/embeddings":
            self._reply(200, {"embeddings": [EmbeddingsServer.vector(text) for text in body["input"]]})
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}"}})

    def _reply(self, status: int, payload: dict) -> None:
        encoded = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(encoded)))
        self.end_headers()
        self.wfile.write(encoded)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output to test results


class _Server(ThreadingHTTPServer):
    record: EmbeddingsServer


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """Return the process's MiniLM embedder, loaded once for the whole run."""
    embedder = embedder_from_config({"EMBEDDINGS": "minilm"})
    embedder.embed(["warm up"])  # pay the cold load here, not inside whichever test runs first
    return embedder


@pytest.fixture(scope="session")
def support_check(minilm: Embedder) -> SupportCheck:
    """Return a citation support check on the shared MiniLM (its vector cache shared by the tests too)."""
    return SupportCheck(minilm)


@pytest.fixture(scope="session")
def embeddings_server() -> Iterator[EmbeddingsServer]:
    """Serve OpenAI-shaped /embeddings on 127.0.0.1 from a thread for the whole run."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.record = EmbeddingsServer(url=f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.record
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def server(embeddings_server: EmbeddingsServer) -> EmbeddingsServer:
    """Return the embeddings server with no requests recorded yet."""
    embeddings_server.requests.clear()
    return embeddings_server


@pytest.fixture
def store(tmp_path: Path, minilm: Embedder) -> VectorStore:
    """Return an embedded Chroma store in tmp_path that embeds with MiniLM."""
    return store_from_config({"CHROMA_PATH": str(tmp_path / "chroma"), "EMBEDDINGS": "minilm"})


@pytest.fixture
def knowledge_base(app, minilm):
    """Return a factory of knowledge bases (inside the app context); their vectors are dropped afterwards."""
    from app.extensions import db
    from app.knowledge.library import vector_store
    from app.models import KnowledgeBase

    made: list[str] = []

    def make(name: str = "Handbook", **fields) -> KnowledgeBase:
        kb = KnowledgeBase(name=name, **fields)
        db.session.add(kb)
        db.session.commit()
        vector_store().drop(kb.collection)  # an id reused after an earlier test's rows were emptied
        made.append(kb.collection)
        return kb

    with app.app_context():
        yield make
        for collection in made:
            vector_store().drop(collection)
