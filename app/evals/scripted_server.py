"""A scripted OpenAI-compatible server on 127.0.0.1: the provider path of an evaluation, with a stubborn model.

`POST /v1/chat/completions`, streamed (server-sent events in OpenAI's chunk format, tool calls as
`delta.tool_calls`) or not, answers each request with the case's next reply — text, tool calls, both,
or an HTTP error — in order, whatever the request says: like a careless or stubborn real model, it
never reads the feedback it is sent. After the last reply it answers `FINAL`. A title request (the
title job's instructions) gets a title and takes no reply; a verifier request (the answer review's
verifier, app/runtime/verifier.py) takes the case's next verifier reply, and after the last an answer out
of schema. `GET /pages/<name>` serves the case's pages (what the http_request tool fetches). Every
request body is kept (`received`), in order.

One server serves an evaluation run, one case at a time (`load` starts a case). stdlib only; it binds
a free port of 127.0.0.1 and nothing else.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from app.evals.dataset import Reply
from app.runtime.titles import INSTRUCTIONS as TITLE_INSTRUCTIONS
from app.runtime.verifier import CLAIMS_PROMPT, SUPPORT_PROMPT

FINAL = "That is all I have to say."
# What the verifier answers once the case's verifier replies are spent: no verdict at all (out of schema).
VERIFIER_FINAL = "I cannot tell."
TITLE = "Evaluation chat"
MODEL = "scripted-model"
# How many pieces a text is streamed in (a real model streams tokens; a few pieces show the joins).
TEXT_PIECES = 3


class ScriptedServer(ThreadingHTTPServer):
    """The server; `load(replies, pages)` gives it the next case, `close()` stops it."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self._lock = threading.Lock()
        self.replies: list[Reply] = []
        self.verifier: list[Reply] = []
        self.pages: dict[str, str] = {}
        self.taken = 0
        self.received: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    @property
    def base_url(self) -> str:
        """The base URL a model configuration names (the OpenAI SDK adds `/chat/completions`)."""
        return f"{self.origin}/v1"

    def load(self, replies: list[Reply], pages: dict[str, str] | None = None,
             verifier: list[Reply] | None = None) -> None:
        """Start a case: its replies in order, its pages, its verifier's replies; forget the last case."""
        with self._lock:
            self.replies, self.pages, self.taken, self.received = list(replies), dict(pages or {}), 0, []
            self.verifier = list(verifier or [])

    def next_reply(self, body: dict[str, Any]) -> Reply | None:
        """Keep the request; return the reply it gets (None: the title), taking it from the script."""
        with self._lock:
            self.received.append(body)
            if is_title_request(body):
                return None
            if is_verifier_request(body):
                return self.verifier.pop(0) if self.verifier else Reply(text=VERIFIER_FINAL)
            if self.taken < len(self.replies):
                self.taken += 1
                return self.replies[self.taken - 1]
            return Reply(text=FINAL)

    def last_request_text(self) -> str:
        """The text of every message of the last model request of the case (title requests left out)."""
        with self._lock:
            bodies = [body for body in self.received if not is_title_request(body) and not is_verifier_request(body)]
        if not bodies:
            return ""
        return "\n\n".join(f"{message.get('role')}: {message_text(message)}"
                           for message in bodies[-1].get("messages") or [])

    def call_id(self) -> str:
        return f"call_{next(self._ids)}"

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client closing its pooled connection
            super().handle_error(request, client_address)

    def close(self) -> None:
        """Stop serving and free the port."""
        self.shutdown()
        self.server_close()
        self._thread.join()


def is_title_request(body: dict[str, Any]) -> bool:
    """Tell whether a request is the title job's (its instructions are the title's)."""
    return any(message.get("role") in ("system", "developer") and TITLE_INSTRUCTIONS[:40] in message_text(message)
               for message in body.get("messages") or [])


def is_verifier_request(body: dict[str, Any]) -> bool:
    """Tell whether a request is the answer review's verifier's (its instructions are the verifier's)."""
    return any(message.get("role") in ("system", "developer")
               and (CLAIMS_PROMPT[:40] in message_text(message) or SUPPORT_PROMPT[:40] in message_text(message))
               for message in body.get("messages") or [])


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message of a request (its parts joined)."""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _title_reply(body: dict[str, Any]) -> Reply:
    tools = [tool.get("function", {}).get("name") for tool in body.get("tools") or []]
    if tools and tools[0]:  # the title's structured output, as an output tool
        return Reply(calls=[{"tool": tools[0], "args": {"title": TITLE}}])
    return Reply(text=json.dumps({"title": TITLE}))


def _pieces(text: str, count: int = TEXT_PIECES) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[start:start + size] for start in range(0, len(text), size)]


def _tokens(body: dict[str, Any]) -> int:
    return max(1, sum(len(message_text(message).split()) for message in body.get("messages") or []))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        name = self.path.split("?", 1)[0].removeprefix("/pages/")
        page = self.server.pages.get(name) if self.path.startswith("/pages/") else None
        if page is None:
            self._send(404, b"Not found", "text/plain; charset=utf-8")
            return
        kind = "text/html" if page.lstrip().startswith("<") else "text/plain"
        self._send(200, page.encode(), f"{kind}; charset=utf-8")

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json({"error": {"message": "The body is not JSON.", "type": "invalid_request_error"}}, 400)
            return
        if not self.path.split("?", 1)[0].endswith("/chat/completions"):
            self._json({"error": {"message": f"No route {self.path}.", "type": "invalid_request_error"}}, 404)
            return
        reply = self.server.next_reply(body)
        if reply is None:
            reply = _title_reply(body)
        if reply.status is not None:
            self._json({"error": {"message": reply.text or "The provider failed.", "type": "server_error"}},
                       reply.status)
            return
        calls = [{"id": self.server.call_id(), "type": "function",
                  "function": {"name": call.tool, "arguments": json.dumps(call.args)}} for call in reply.calls]
        usage = {"prompt_tokens": _tokens(body), "completion_tokens": max(1, len(reply.text.split())) + len(calls)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if body.get("stream"):
            self._stream(body.get("model") or MODEL, reply.text, calls, usage)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        self._json({"id": "scripted", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model") or MODEL, "usage": usage,
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": "tool_calls" if calls else "stop"}]})

    def _stream(self, model: str, text: str, calls: list[dict[str, Any]], usage: dict[str, int]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": "scripted", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant"})]
        chunks += [chunk({"content": piece}) for piece in _pieces(text)]
        for index, call in enumerate(calls):
            chunks.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                       for piece in _pieces(call["function"]["arguments"], 2)]
        chunks.append(chunk({}, "tool_calls" if calls else "stop"))
        chunks.append({**base, "choices": [], "usage": usage})
        for item in chunks:
            self._chunk(f"data: {json.dumps(item)}\n\n".encode())
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _json(self, payload: dict[str, Any], status: int = 200) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass
