"""A fake OpenAI-compatible server on 127.0.0.1 (stdlib only), for tests and benchmarks.

It streams a fixed multi-chunk chat completion, or hangs, or fails, and counts the requests it got.
Keep-alive and TCP_NODELAY, so a benchmark measures the client, not this server.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = ("The ", "answer ", "is ", "forty-", "two.")
ANSWER = "".join(REPLY)


class FakeOpenAI(ThreadingHTTPServer):
    """The server: `mode` is "answer", "hang" or "fail" (HTTP 500); `requests` counts POSTs."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, mode: str = "answer") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = mode
        self.requests = 0
        self.released = threading.Event()
        self._count = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client closing its pooled connection
            super().handle_error(request, client_address)

    def count(self) -> None:
        with self._count:
            self.requests += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeOpenAI

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.count()
        if self.server.mode == "hang":
            self.server.released.wait()
            self.close_connection = True
            return
        if self.server.mode == "fail":
            self._json({"error": {"message": "The fake server failed.", "type": "server_error"}}, 500)
            return
        model = body.get("model", "fake")
        if not body.get("stream"):
            self._json({"id": "fake", "object": "chat.completion", "created": int(time.time()), "model": model,
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": ANSWER}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": len(REPLY), "total_tokens": 15}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": "fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        chunks += [{**base, "choices": [{"index": 0, "delta": {"content": part}}]} for part in REPLY]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": len(REPLY), "total_tokens": 15}})
        for chunk in chunks:
            self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _json(self, payload: dict, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def fake_openai(mode: str = "answer") -> Iterator[FakeOpenAI]:
    """Serve a fake OpenAI-compatible API on a free port of 127.0.0.1 until the block ends."""
    server = FakeOpenAI(mode)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.released.set()
        server.shutdown()
        server.server_close()
        thread.join()
