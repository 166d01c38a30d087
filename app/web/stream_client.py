"""The client of a live stream: has it gone? Both run streams (the htmx one and AG-UI) ask between two waits.

A stream waits for its run's next event, and a client that closed its connection meanwhile must not
keep the stream's thread and slot until the run ends. Two ways to notice it, used together:
- the connection's socket, where the server exposes it (gunicorn, Werkzeug's server): readable with
  nothing to read means the client sent its FIN;
- a heartbeat: an SSE comment (`: keep-alive`) every STREAM_HEARTBEAT_SECONDS while nothing else was
  written. EventSource and AG-UI clients ignore comment lines (@ag-ui/client reads `data:` lines only),
  and a connection that went without a FIN (a proxy, a peer that died) fails at the write, which
  closes the stream's generator.
"""

from __future__ import annotations

import select
import socket
import time

from flask import current_app, request

HEARTBEAT = ": keep-alive\n\n"


class StreamClient:
    """The current request's client, for a stream that waits: made in the request, asked from its generator."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = request.environ.get("gunicorn.socket") or \
            request.environ.get("werkzeug.socket")
        self.every = float(current_app.config["STREAM_HEARTBEAT_SECONDS"])
        self.last_write = time.monotonic()

    def wrote(self) -> None:
        """Note that the stream just wrote to the client (an event counts as a heartbeat)."""
        self.last_write = time.monotonic()

    def heartbeat(self) -> str | None:
        """Return the comment to write when nothing was written for a heartbeat's interval, else None."""
        if time.monotonic() - self.last_write < self.every:
            return None
        self.wrote()
        return HEARTBEAT

    def gone(self) -> bool:
        """Tell whether the client closed its connection: readable, with nothing left to read."""
        if self.sock is None:
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and not self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            return True
