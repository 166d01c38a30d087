"""One asyncio event loop per process, in a daemon thread started lazily (and again after a fork).

Flask request threads never call `run_sync`: they hand coroutines to this loop. Provider clients
and MCP sessions are bound to the loop they were created on, so there must be exactly one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_pid: int | None = None


def get_loop() -> asyncio.AbstractEventLoop:
    """Return this process's runtime loop, starting its thread on first use."""
    global _loop, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or not _loop.is_running():
            loop = asyncio.new_event_loop()
            started = threading.Event()
            thread = threading.Thread(target=_serve, args=(loop, started), name="skilldesk-runtime", daemon=True)
            thread.start()
            started.wait()
            _loop, _pid = loop, os.getpid()
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule a coroutine on the runtime loop; returns a thread-safe future."""
    return asyncio.run_coroutine_threadsafe(coro, get_loop())


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run a coroutine on the runtime loop and wait for its result (never call from the loop itself).

    Past the timeout the coroutine is cancelled (a model call nobody waits for is not left running) and
    TimeoutError is raised.
    """
    future = submit(coro)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise


def _serve(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(started.set)
    loop.run_forever()
