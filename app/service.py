"""The serving machine's knowledge process: what must exist once per machine, not in every web worker.

`flask serve` runs it as gunicorn's one dirty worker (gunicorn forks, restarts and stops it with the web
workers). It holds:
- the embedding model (MiniLM and torch, loaded at its first use: about 600 MB that web workers never load),
  for indexing and for the web workers' query embeddings (`app/knowledge/remote.py`);
- the embedded Chroma store, which only one process may open (memories and knowledge searches of every
  web worker are made here);
- the job consumer (`JOBS_WORKERS` threads; not with `--no-jobs`), so indexing a knowledge base, the
  built-in documentation's at first start included, never runs in a web worker.
Live-event wake-ups do not pass through it: on the embedded default each process has a socket of its own
(`app/runtime/wakeups.py`, `LocalWakeups`), so this process's heavy work (indexing) delays no wake-up.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.dirty import DirtyApp

from app.extensions import db
from app.knowledge.embeddings import MiniLMEmbedder
from app.knowledge.records import to_wire
from app.runtime import interruption

log = logging.getLogger(__name__)

SERVICE_APP = "app.service:KnowledgeService"
_serving: Flask | None = None


def serve_app(app: Flask) -> None:
    """Name the app the knowledge process serves (the one `flask serve` built: the fork inherits it)."""
    global _serving
    _serving = app


class KnowledgeService(DirtyApp):
    """gunicorn's dirty app: `embed` and `store` (a `VectorStore` method by name) for the web workers."""

    workers = 1

    def init(self) -> None:
        assert _serving is not None, "serve_app() names the app before gunicorn starts"
        self.app = app = _serving
        app.config["KNOWLEDGE_PROCESS"] = False  # this process is the one that embeds and opens the store
        with app.app_context():
            db.engine.dispose(close=False)  # the master's connections stay the master's
        self.embedder = MiniLMEmbedder()
        self._store: Any = None
        self._store_lock = threading.Lock()
        self._public = None
        self.consumer, self.lock = _start_consumer(app)

    def __call__(self, action: str, *args: Any, **kwargs: Any) -> Any:
        try:
            if action == "embed":
                return _pack(self.embedder.embed(list(args[0])))
            if action == "store":
                name, *rest = args
                return to_wire(self._method(name)(*rest, **kwargs))
            if action == "ping":
                return "pong"
            raise ValueError(f"The knowledge process has no action {action!r}")
        except Exception as error:  # sent back and raised in the web worker, with its type when callers catch it
            log.warning("knowledge process: %s failed", action, exc_info=not isinstance(error, ValueError))
            return {"__error__": type(error).__name__, "message": str(error)}

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.stop(graceful=False)
            os.close(self.lock)
        interruption.interrupt_here(self.app)  # runs started by jobs (triggers) end interrupted, not left running

    def _method(self, name: str):
        from app.knowledge.vectors import VectorStore, store_from_config  # chromadb: only this process loads it

        if name.startswith("_") or not callable(getattr(VectorStore, name, None)):
            raise ValueError(f"The vector store has no method {name!r}")
        with self._store_lock:
            if self._store is None:
                self._store = store_from_config(self.app.config)
        return getattr(self._store, name)


def _pack(vectors: list[list[float]]) -> bytes:
    from array import array

    flat = array("f")
    for vector in vectors:
        flat.extend(vector)
    return flat.tobytes()


def _start_consumer(app: Flask):
    """Start the job consumer when `flask serve` runs jobs and this instance has none yet (its lock)."""
    if not app.extensions.get("serve_jobs") or app.config["JOBS_IMMEDIATE"]:
        return None, None
    lock = _take_lock(Path(app.config["JOBS_SQLITE_PATH"]).with_suffix(".consumer.lock"))
    if lock is None:
        log.warning("another process runs this instance's job consumer (it holds %s.consumer.lock)",
                    Path(app.config["JOBS_SQLITE_PATH"]).stem)
        return None, None
    consumer = app.extensions["jobs"].consumer(workers=int(app.config["JOBS_WORKERS"]))
    consumer.start()
    log.info("the knowledge process %s runs the job consumer (%s threads)", os.getpid(), app.config["JOBS_WORKERS"])
    return consumer, lock


def _take_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another process runs the consumer
        os.close(fd)
        return None
    return fd
