"""Text from outside: control characters are refused (422) before any view reads them.

PostgreSQL cannot store NUL in text (the insert fails, and the transaction with it), and no person
types the other C0/C1 control characters; SQLite stored them silently. Tab, newline and carriage
return are text. One check on every request, so no form, view or JSON endpoint can forget it: the
query string, every form field (name and value) and every string of a JSON body (keys included).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from flask import Flask, abort, request

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""C0 and C1 control characters and DEL, except tab (09), newline (0A) and carriage return (0D)."""


def refuse_control_characters() -> None:
    """Abort with 422, naming the field, when any text of the request holds a control character."""
    for name, value in _texts():
        found = CONTROL.search(name) or CONTROL.search(value)
        if found:
            shown = CONTROL.sub("\N{REPLACEMENT CHARACTER}", name) or "(a field)"
            abort(422, f"“{shown}” contains a control character (U+{ord(found.group()):04X}); "
                       "remove it and send again.")


def _texts() -> Iterator[tuple[str, str]]:
    for source in (request.args, request.form):
        yield from source.items(multi=True)
    if request.is_json:
        yield from _json_strings("body", request.get_json(silent=True))


def _json_strings(path: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield path, str(key)
            yield from _json_strings(f"{path}.{key}", item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_strings(f"{path}[{index}]", item)


def init_app(app: Flask) -> None:
    app.before_request(refuse_control_characters)
