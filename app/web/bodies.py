"""Request bodies: one size limit, enforced whether or not the body carries a Content-Length.

Werkzeug stops reading a body without a Content-Length (chunked) at `max_content_length` and
returns what it read, so an oversized body arrives cut short instead of refused. The request class
below reads one byte past the limit and answers 413 when it is there. A view may lower the limit
for itself with `@body_limit("SETTING")`; the limit is known before anything reads the body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, current_app
from flask import Request as FlaskRequest
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.utils import cached_property
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


class Request(FlaskRequest):
    """Flask's request with the view's own body limit and a limit that holds without a Content-Length."""

    @property
    def max_content_length(self) -> int | None:
        if self._max_content_length is None and current_app and self.endpoint:
            setting = getattr(current_app.view_functions.get(self.endpoint), LIMIT_ATTR, None)
            if setting:
                return current_app.config[setting]
        return super().max_content_length

    @max_content_length.setter
    def max_content_length(self, value: int | None) -> None:
        self._max_content_length = value

    @cached_property
    def stream(self):
        limit = self.max_content_length
        if limit is not None and self.content_length is None and "wsgi.input_terminated" in self.environ:
            return CappedStream(self.environ["wsgi.input"], limit)
        return super().stream  # a Content-Length over the limit is refused before reading


def init_app(app: Flask) -> None:
    app.request_class = Request
