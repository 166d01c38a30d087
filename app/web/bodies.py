"""Request bodies: one size limit, enforced whether or not the body carries a Content-Length.

Werkzeug stops reading a body without a Content-Length (chunked) at `max_content_length` and
returns what it read, so an oversized body arrives cut short instead of refused. The request class
(`app/web/request.py`) reads such a body through `CappedStream`, which reads one byte past the limit
and answers 413 when it is there. A view may lower the limit
for itself with `@body_limit("SETTING")`; the limit is known before anything reads the body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Request as FlaskRequest
from flask import current_app
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wsgi import LimitedStream

LIMIT_ATTR = "_skilldesk_body_limit"


def body_limit(setting: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Cap the body of this view at the configuration value `setting` (bytes) instead of MAX_CONTENT_LENGTH."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        setattr(view, LIMIT_ATTR, setting)
        return view

    return decorate


class CappedStream(LimitedStream):
    """A stream that refuses (413) a body longer than `cap` instead of cutting it at `cap`."""

    def __init__(self, stream, cap: int) -> None:
        super().__init__(stream, cap + 1, is_max=True)  # one byte more tells "too long" from "exactly cap"
        self.cap = cap

    def readinto(self, b) -> int | None:  # type: ignore[override]
        count = super().readinto(b)
        if self._pos > self.cap:
            raise RequestEntityTooLarge()
        return count


def body_limit_of(request: FlaskRequest) -> int | None:
    """The limit of this request's body: the view's own (`@body_limit`), else MAX_CONTENT_LENGTH."""
    if current_app and request.endpoint:
        setting = getattr(current_app.view_functions.get(request.endpoint), LIMIT_ATTR, None)
        if setting:
            return current_app.config[setting]
    return None


def capped_stream(request: FlaskRequest):
    """The body stream of a request without a Content-Length, refusing (413) a body over the limit."""
    limit = request.max_content_length
    if limit is not None and request.content_length is None and "wsgi.input_terminated" in request.environ:
        return CappedStream(request.environ["wsgi.input"], limit)
    return None  # a Content-Length over the limit is refused by Werkzeug before reading
