"""Whole numbers from the outside world, bounded to what the database can store.

Ids are PostgreSQL `integer` columns (SQLite's are wider): a number past 2**31 - 1 names no row, and
handing it to the database raises (OverflowError on SQLite, "integer out of range" on PostgreSQL).
Two doors, one rule:
- route parameters: the `int` converter below replaces Werkzeug's, so `/chat/<int:id>` past the
  range is 404 like any id that names nothing;
- query strings, forms and headers: `request.args.get(name, default, type=int)` (and `.form`,
  `.headers`) reads through `bounded_int` (`app/models/base.py`), so a number out of range falls
  back to the default as a non-number does: `?page=` past the range is the first page, a `Last-Event-ID` past it replays
  from the start, an `agent_id` past it names no agent (404). `db.paginate` reads its own `?page=`
  through the same parser (`app/extensions.py`), and forms that choose an id from a list use
  `SelectField(coerce=bounded_int)`: out of range is "Not a valid choice" (422).
"""

from __future__ import annotations

from typing import Any

from werkzeug.datastructures import EnvironHeaders, ImmutableMultiDict
from werkzeug.routing import IntegerConverter

from app.models.base import ID_MAX, bounded_int

__all__ = ["ID_MAX", "Headers", "IdConverter", "Parameters", "bounded_int"]


class IdConverter(IntegerConverter):
    """`<int:...>` in a route: 0..ID_MAX, so an id past the database's range is 404, not a 500."""

    def __init__(self, map, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max", ID_MAX)
        super().__init__(map, *args, **kwargs)


class _BoundedGet:
    def get(self, key, default=None, type=None):  # noqa: A002 - Werkzeug's own signature
        return super().get(key, default, bounded_int if type is int else type)


class Parameters(_BoundedGet, ImmutableMultiDict):
    """Query-string and form values whose `.get(..., type=int)` is bounded."""


class Headers(_BoundedGet, EnvironHeaders):
    """Request headers whose `.get(..., type=int)` is bounded (Last-Event-ID)."""
