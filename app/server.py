"""The production server behind `flask serve` and `make run`: gunicorn with threaded workers, one per core.

- Each web worker serves SERVER_THREADS requests at once (a live stream holds a thread, never a
  database connection while it waits) and runs its own runtime loop, started after the fork.
- One knowledge process beside them (gunicorn's dirty worker, `app/service.py`) holds the embedding model,
  the embedded Chroma store and the job consumer (unless `--no-jobs`); web workers never import torch.
  Plain `gunicorn wsgi:app` runs none of it.
- Ctrl+C (SIGINT) and SIGTERM stop the runs in flight as `interrupted`, keeping what they had
  produced and the user's message, before the worker exits.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

from app import service
from app.extensions import db
from app.runtime import events, execution, interruption

log = logging.getLogger(__name__)

GRACEFUL_TIMEOUT_SECONDS = 10
# Threads of the knowledge process answering web workers at once (embeddings queue on the model anyway).
KNOWLEDGE_THREADS = 8
KNOWLEDGE_TIMEOUT_SECONDS = 120
# Signals that stop a worker: once it is exiting, another one (a second Ctrl+C, the master's SIGQUIT
# arriving late on a busy machine) must not raise SystemExit inside its exit and leave runs `running`.
STOP_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)


class Server(BaseApplication):
    """gunicorn serving an app that is already built (the one `flask --app wsgi` loaded)."""

    def __init__(self, app: Flask, options: dict[str, Any]) -> None:
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        return self.application


def options(app: Flask, host: str, port: int, workers: int, jobs: bool) -> dict[str, Any]:
    """Return gunicorn's settings for serving the app."""
    app.extensions["serve_jobs"] = jobs
    return {
        "bind": f"{host}:{port}",
        "workers": workers,
        "worker_class": "app.server.Worker",
        "threads": int(app.config["SERVER_THREADS"]),
        # Streams are long: the gthread worker keeps answering its heartbeat while they run.
        "graceful_timeout": GRACEFUL_TIMEOUT_SECONDS,
        "keepalive": 5,
        "post_fork": post_fork,
        "worker_exit": worker_exit,
        "dirty_apps": [service.SERVICE_APP],
        "dirty_workers": 1,
        "dirty_threads": KNOWLEDGE_THREADS,
        "dirty_timeout": KNOWLEDGE_TIMEOUT_SECONDS,
        "dirty_graceful_timeout": GRACEFUL_TIMEOUT_SECONDS,
        "accesslog": os.environ.get("SKILLDESK_ACCESS_LOG") or None,
        "errorlog": "-",
        "loglevel": "info",
        # gunicorn names its dirty arbiter's pid file after proc_name (in the shared temporary folder) and, at
        # start, kills the arbiter that file names as an orphan: one name per address, or a second server on
        # this machine would end the first one's knowledge process.
        "proc_name": f"skilldesk-{host}-{port}",
        "control_socket_disable": True,  # one path per user: several servers on a machine would collide
    }


def default_workers() -> int:
    """As many web workers as this process may use cores."""
    return max(1, len(os.sched_getaffinity(0)))


def serve(app: Flask, host: str, port: int, workers: int | None = None, jobs: bool = True) -> None:
    """Serve until Ctrl+C or SIGTERM."""
    # Web workers ask the knowledge process for embeddings and the embedded store, and (on the embedded
    # default) exchange wake-ups through sockets of their own: chosen here, before the fork, for every process.
    app.config["KNOWLEDGE_PROCESS"] = True
    events.init_app(app)
    service.serve_app(app)
    with app.app_context():
        db.engine.dispose()  # no connection of the master may be shared by the forked workers
    Server(app, options(app, host, port, workers or default_workers(), jobs)).run()


class Worker(ThreadWorker):
    """gunicorn's threaded worker, which interrupts the runs in flight as soon as it is told to stop."""

    def handle_exit(self, sig, frame) -> None:  # SIGTERM: finish what is being answered, then exit
        execution.interrupt_all()  # the runs end at once, so their streams end too
        super().handle_exit(sig, frame)

    def handle_quit(self, sig, frame) -> None:  # SIGINT (Ctrl+C) and SIGQUIT: exit now
        # Ctrl+C reaches the worker and the master, which sends SIGQUIT on top: a second signal handled while
        # the first one's SystemExit unwinds would raise again inside gunicorn's `finally` and skip
        # `worker_exit`, leaving the runs `running`. The master's SIGKILL still ends a worker stuck past its timeout.
        ignore_stop_signals()
        execution.interrupt_all()
        super().handle_quit(sig, frame)


def ignore_stop_signals() -> None:
    """Ignore further stop signals: this worker is already on its way out."""
    # A handler that does nothing rather than SIG_IGN: a signal already caught but not yet handled would
    # otherwise raise "signal ignored due to race condition" wherever the worker happens to be.
    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, _already_stopping)


def _already_stopping(_signal, _frame) -> None:
    pass


def post_fork(_arbiter, worker) -> None:
    """Start the worker without the master's database connections (they stay the master's)."""
    with worker.app.application.app_context():
        db.engine.dispose(close=False)


def worker_exit(_arbiter, worker) -> None:
    """Interrupt the runs still in flight and wait for them to be stored."""
    app: Flask | None = getattr(worker, "wsgi", None)
    if app is None:
        return
    ignore_stop_signals()  # after a graceful SIGTERM too: a Ctrl+C now would cut the wait short
    log.info("worker %s is storing the runs it interrupted", worker.pid)
    interruption.interrupt_here(app)
