"""Column helpers shared by the models."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator

ID_MAX = 2**31 - 1
"""The largest id a row can have: ids are `integer` columns, 32-bit on PostgreSQL (wider on SQLite)."""


def bounded_int(value) -> int:
    """Parse a whole number from 0 to ID_MAX; raise ValueError for anything else (ids, pages, event numbers)."""
    number = int(value)
    if not 0 <= number <= ID_MAX:
        raise ValueError(f"{number} is outside 0..{ID_MAX}")
    return number


def utcnow() -> datetime:
    """Return the current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """A datetime stored in UTC that always comes back timezone-aware (SQLite forgets the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    def process_result_value(self, value, dialect):
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value
