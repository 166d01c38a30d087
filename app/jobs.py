"""Background jobs on huey: SqliteHuey in instance/ by default, RedisHuey with REDIS_URL, inline in tests.

Tasks are declared at import time with `@jobs.task()` and bound to the app's huey instance in
`init_app`, so the same task code runs on every backend and always inside an app context.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
from collections.abc import Callable
from typing import Any

from flask import Flask, current_app, has_app_context
from huey import Huey, MemoryHuey, RedisHuey, SqliteHuey
from huey.consumer import Consumer

log = logging.getLogger(__name__)

# Modules that declare tasks; imported before binding so every task exists on every backend.
TASK_MODULES: tuple[str, ...] = (
    "app.runtime.titles",
    "app.skills.compaction",
    "app.knowledge.indexing",
    "app.evals.runner",
    "app.api.exchanges",
    "app.api.mcp_server",
    "app.waiting.notify",
    "app.waiting.timeouts",
)


class Jobs:
    """Declare tasks once; bind them to each app's huey instance."""

    def __init__(self) -> None:
        self._tasks: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {"ping": (ping, {})}
        self._periodic: dict[str, tuple[Callable[..., Any], Any]] = {}

    def task(self, **options: Any) -> Callable[[Callable[..., Any]], TaskHandle]:
        """Declare a background task; call `.delay(...)` on the result to queue it."""

        def declare(fn: Callable[..., Any]) -> TaskHandle:
            self._tasks[fn.__name__] = (fn, options)
            return TaskHandle(fn.__name__, fn)

        return declare

    def periodic(self, schedule: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare a periodic task (a huey `crontab(...)` schedule)."""

        def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._periodic[fn.__name__] = (fn, schedule)
            return fn

        return declare

    def init_app(self, app: Flask) -> None:
        for module in TASK_MODULES:
            importlib.import_module(module)
        huey = _make_huey(app)
        bound: dict[str, Any] = {}
        for name, (fn, options) in self._tasks.items():
            bound[name] = huey.task(name=name, **options)(_in_app_context(app, fn))
        for name, (fn, schedule) in self._periodic.items():
            huey.periodic_task(schedule, name=name)(_in_app_context(app, fn))
        app.extensions["jobs"] = JobQueue(huey, bound)


class JobQueue:
    """The app's huey instance and its bound tasks."""

    def __init__(self, huey: Huey, tasks: dict[str, Any]) -> None:
        self.huey = huey
        self.tasks = tasks

    def consumer(self, workers: int) -> Consumer:
        """Return a consumer that runs in threads beside the web server."""
        return EmbeddedConsumer(self.huey, workers=workers, worker_type="thread")


class TaskHandle:
    """What `@jobs.task()` returns: call it directly, or `.delay()` to queue it on the current app."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name = name
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def delay(self, *args: Any, **kwargs: Any) -> Any:
        """Queue the task; in immediate mode it runs before this returns."""
        return current_app.extensions["jobs"].tasks[self.name](*args, **kwargs)


def ping(token: str) -> str:
    """Answer from inside a job: proves queueing, the consumer and the app context (`PING.delay("x")`)."""
    log.info("ping %s answered by %s", token, current_app.import_name)
    return token


# The built-in job, declared with the Jobs class itself since app.extensions imports this module.
PING = TaskHandle("ping", ping)


def stopping() -> bool:
    """Whether the job consumer of this app's queue is shutting down: a long job stops at its next safe point.

    Indexing checks it between batches and is resumed later (`resume_indexing`), so Ctrl+C on a consumer
    never waits for a whole knowledge base to be embedded.
    """
    queue = current_app.extensions.get("jobs") if has_app_context() else None
    return bool(queue is not None and getattr(queue.huey, "consumer_stopping", False))


class StoppingConsumer(Consumer):
    """huey's consumer, which tells the jobs of its queue that it is stopping (`stopping()`)."""

    def start(self) -> None:
        self.huey.consumer_stopping = False
        super().start()

    # Past the shutdown timeout a job still runs (a model loading, a slow request): leave at once, as a second
    # Ctrl+C would. Interpreter shutdown cannot stop such a thread and aborts in native code if it tries.
    exits_when_abandoned = True

    def stop(self, graceful: bool = False) -> None:
        self.huey.consumer_stopping = True
        super().stop(graceful)
        abandoned = [worker.name for _, worker in self.worker_threads if worker.is_alive()]
        if graceful and abandoned and self.exits_when_abandoned:
            log.warning("leaving jobs still running after the shutdown timeout: %s", ", ".join(abandoned))
            for hook in getattr(self.huey, "exit_hooks", ()):
                hook()  # e.g. runs started by jobs end interrupted (flask jobs worker)
            logging.shutdown()
            os._exit(0)


class _StoppingHuey:
    """A huey whose consumers (`huey_consumer wsgi.huey`, `flask jobs worker`) say when they stop, and give
    a job still running JOBS_SHUTDOWN_SECONDS after Ctrl+C up (its run ends interrupted, indexing resumes)."""

    shutdown_seconds: float | None = None

    def create_consumer(self, **options: Any) -> Consumer:
        if options.get("shutdown_timeout") is None:
            options["shutdown_timeout"] = self.shutdown_seconds
        return StoppingConsumer(self, **options)


class StoppingRedisHuey(_StoppingHuey, RedisHuey):
    pass


class StoppingSqliteHuey(_StoppingHuey, SqliteHuey):
    pass


class EmbeddedConsumer(StoppingConsumer):
    """A consumer that leaves signal handling, and the process's exit, to the server it runs beside."""

    exits_when_abandoned = False

    def _set_signal_handlers(self) -> None:
        pass


def _make_huey(app: Flask) -> Huey:
    if app.config["JOBS_IMMEDIATE"]:
        return MemoryHuey("skilldesk", immediate=True, results=False)
    if app.config.get("REDIS_URL"):
        huey: _StoppingHuey = StoppingRedisHuey("skilldesk", url=app.config["REDIS_URL"], results=False)
    else:
        huey = StoppingSqliteHuey("skilldesk", filename=app.config["JOBS_SQLITE_PATH"], results=False)
    huey.shutdown_seconds = float(app.config["JOBS_SHUTDOWN_SECONDS"])
    return huey  # type: ignore[return-value]


def _in_app_context(app: Flask, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with app.app_context():
            return fn(*args, **kwargs)

    return run
