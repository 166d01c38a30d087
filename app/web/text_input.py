"""Text from outside: control characters are refused (422) before any view reads them.

PostgreSQL cannot store NUL in text (the insert fails, and the transaction with it), and no person
types the other C0/C1 control characters; SQLite stored them silently. Tab, newline and carriage
return are text. One check on every request, so no form, view or JSON endpoint can forget it: the
query string, every form field (name and value), every uploaded file's name and every string of a
JSON body (keys included). An uploaded file's name is also refused with a bidirectional control
(app/policy/bidi.py): it becomes a document's title and source, shown reordered. A URL's path
segments (`/data/<name>`, `/hooks/<token>`, `/v1/models/<path:model>`) meet the same rule in the
route converters below, which replace Werkzeug's: a segment with a control character names nothing
(404), on every route, before any sign-in check or view.

The same walk refuses (400) a JSON body nested deeper than MAX_JSON_DEPTH: Python's json module
parses and serializes recursively, so a few thousand `[` raised RecursionError here, in the view,
or wherever the body was dumped again (a 500). A page context sent in a form field is held to the
same depth, with the same words, by app/assistance/context.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from flask import Flask, abort, request
from werkzeug.routing import PathConverter, UnicodeConverter, ValidationError

from app.policy.bidi import bidi_problem
from app.policy.schema_subset import MAX_JSON_DEPTH, too_deep

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""C0 and C1 control characters and DEL, except tab (09), newline (0A) and carriage return (0D)."""
TOO_DEEP = too_deep("The JSON body")


class TextConverter(UnicodeConverter):
    """`<name>` and `<string:name>` in a route: one segment with no control character, or 404."""

    def to_python(self, value: str) -> str:
        if CONTROL.search(value):
            raise ValidationError()
        return value


class TextPathConverter(PathConverter):
    """`<path:name>` in a route: segments with no control character, or 404."""

    def to_python(self, value: str) -> str:
        if CONTROL.search(value):
            raise ValidationError()
        return value


def refuse_control_characters() -> None:
    """Abort with 422, naming the field, when any text of the request holds a control character."""
    for name, value in _texts():
        found = CONTROL.search(name) or CONTROL.search(value)
        if found:
            shown = CONTROL.sub("\N{REPLACEMENT CHARACTER}", name) or "(a field)"
            abort(422, f"“{shown}” contains a control character (U+{ord(found.group()):04X}); "
                       "remove it and send again.")
    for name, file in request.files.items(multi=True):  # a file's name is a single-line name (app/policy/bidi.py)
        if file.filename and (problem := bidi_problem(file.filename)):
            abort(422, f"“{name}”: {problem}")


def _texts() -> Iterator[tuple[str, str]]:
    for source in (request.args, request.form):
        yield from source.items(multi=True)
    for name, file in request.files.items(multi=True):  # a file's name becomes a title, a source
        yield name, file.filename or ""
    if request.is_json:
        try:
            body = request.get_json(silent=True)
        except RecursionError:
            abort(400, TOO_DEEP)
        yield from _json_strings("body", body)


def _json_strings(path: str, value: Any) -> Iterator[tuple[str, str]]:
    """Every string of a JSON value with its path, keys included, in document order; a loop, not recursion."""
    stack: list[tuple[str, Any, int]] = [(path, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        if isinstance(item, str):
            yield where, item
            continue
        if isinstance(item, dict | list) and depth >= MAX_JSON_DEPTH:
            abort(400, TOO_DEEP)
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append((f"{where}.{key}", child, depth + 1))
                stack.append((where, str(key), depth))  # the key, popped before its value
        elif isinstance(item, list):
            stack.extend((f"{where}[{index}]", child, depth + 1) for index, child in reversed(list(enumerate(item))))


def init_app(app: Flask) -> None:
    app.before_request(refuse_control_characters)
