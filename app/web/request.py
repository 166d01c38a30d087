"""The app's request class: Flask's, with capped bodies and bounded integers, and the route converters."""

from __future__ import annotations

from flask import Flask
from flask import Request as FlaskRequest
from werkzeug.utils import cached_property

from app.web import bodies, integers, text_input


class Request(FlaskRequest):
    """Flask's request; see `bodies` (413 with or without a Content-Length) and `integers`."""

    parameter_storage_class = integers.Parameters

    def __init__(self, environ, *args, **kwargs) -> None:
        super().__init__(environ, *args, **kwargs)
        self.headers = integers.Headers(environ)

    @property
    def max_content_length(self) -> int | None:
        if self._max_content_length is None:
            limit = bodies.body_limit_of(self)
            if limit is not None:
                return limit
        return super().max_content_length

    @max_content_length.setter
    def max_content_length(self, value: int | None) -> None:
        self._max_content_length = value

    @cached_property
    def stream(self):
        return bodies.capped_stream(self) or super().stream


def init_app(app: Flask) -> None:
    """Use this request class, the bounded `int` converter and the text ones (before any route is added)."""
    app.request_class = Request
    app.url_map.converters["int"] = integers.IdConverter
    for name in ("default", "string"):
        app.url_map.converters[name] = text_input.TextConverter
    app.url_map.converters["path"] = text_input.TextPathConverter
