"""How much one process takes on at once: runs, and live streams (each holds a request thread).

Past either bound a new turn is refused before anything is stored, with 503 and Retry-After, rather
than left to hang, time out or fail half-written. The bounds come from the configuration
(`MAX_RUNS`, `MAX_STREAMS`, derived from `SERVER_THREADS`; see docs/configuration.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from flask import Flask
from werkzeug.exceptions import ServiceUnavailable

from app.runtime import execution

RETRY_AFTER_SECONDS = 5

_lock = threading.Lock()
_streams = 0


class Saturated(ServiceUnavailable):
    """This process is at its bound of runs or streams: try again in a few seconds."""

    def __init__(self, description: str) -> None:
        super().__init__(description, retry_after=RETRY_AFTER_SECONDS)


def admit_turn(app: Flask) -> None:
    """Raise `Saturated` when this process cannot take on one more run and its stream."""
    if execution.running() >= int(app.config["MAX_RUNS"]):
        raise Saturated("The server is answering as many messages as it can right now. "
                        f"Your message was not sent; send it again in {RETRY_AFTER_SECONDS} seconds.")
    if streams() >= int(app.config["MAX_STREAMS"]):
        raise Saturated("The server is streaming as many answers as it can right now. "
                        f"Your message was not sent; send it again in {RETRY_AFTER_SECONDS} seconds.")


def streams() -> int:
    """Return how many live streams this process serves now."""
    return _streams


def take_stream(app: Flask) -> Callable[[], None]:
    """Take one of the process's stream slots, or raise `Saturated`; returns its release (safe to call twice)."""
    global _streams
    with _lock:
        if _streams >= int(app.config["MAX_STREAMS"]):
            raise Saturated("The server is streaming as many answers as it can right now; "
                            f"the answer is kept: reload in {RETRY_AFTER_SECONDS} seconds to see it.")
        _streams += 1
    released = threading.Event()

    def release() -> None:
        global _streams
        with _lock:
            if not released.is_set():
                released.set()
                _streams -= 1

    return release
