"""The production server behind `flask serve` and `make run`: gunicorn with threaded workers.

- Each worker serves SERVER_THREADS requests at once (a live stream holds a thread, never a
  database connection while it waits) and runs its own runtime loop, started after the fork.
- The job consumer runs once per machine and queue, in whichever worker holds `instance/jobs.consumer.lock`,
  and only when asked (`flask serve` asks unless `--no-jobs`); plain `gunicorn wsgi:app` runs none.
- Ctrl+C (SIGINT) and SIGTERM stop the runs in flight as `interrupted`, keeping what they had
  produced and the user's message, before the worker exits.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

from app.extensions import db
from app.runtime import execution, interruption

log = logging.getLogger(__name__)

GRACEFUL_TIMEOUT_SECONDS = 10
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
        "post_worker_init": post_worker_init,
        "worker_exit": worker_exit,
        "accesslog": os.environ.get("SKILLDESK_ACCESS_LOG") or None,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "skilldesk",
        "control_socket_disable": True,  # one path per user: several servers on a machine would collide
    }


def serve(app: Flask, host: str, port: int, workers: int = 1, jobs: bool = True) -> None:
    """Serve until Ctrl+C or SIGTERM."""
    with app.app_context():
        db.engine.dispose()  # no connection of the master may be shared by the forked workers
    Server(app, options(app, host, port, workers, jobs)).run()


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
    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, signal.SIG_IGN)


def post_fork(_arbiter, worker) -> None:
    """Start the worker without the master's database connections (they stay the master's)."""
    with worker.app.application.app_context():
        db.engine.dispose(close=False)


def post_worker_init(worker) -> None:
    """Start the job consumer in the one worker that gets the instance's lock, when asked to."""
    app: Flask = worker.wsgi
    if not app.extensions.get("serve_jobs") or app.config["JOBS_IMMEDIATE"]:
        return
    lock = _take_lock(Path(app.config["JOBS_SQLITE_PATH"]).with_suffix(".consumer.lock"))
    if lock is None:
        return
    consumer = app.extensions["jobs"].consumer(workers=int(app.config["JOBS_WORKERS"]))
    consumer.start()
    worker.skilldesk_consumer = (consumer, lock)
    log.info("worker %s runs the job consumer (%s threads)", worker.pid, app.config["JOBS_WORKERS"])


def worker_exit(_arbiter, worker) -> None:
    """Interrupt the runs still in flight and wait for them to be stored, then stop the job consumer."""
    app: Flask | None = getattr(worker, "wsgi", None)
    if app is None:
        return
    ignore_stop_signals()  # after a graceful SIGTERM too: a Ctrl+C now would cut the wait short
    log.info("worker %s is storing the runs it interrupted", worker.pid)
    interruption.interrupt_here(app)
    consumer, lock = getattr(worker, "skilldesk_consumer", (None, None))
    if consumer is not None:
        consumer.stop(graceful=False)
        os.close(lock)


def _take_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another worker runs the consumer
        os.close(fd)
        return None
    return fd
