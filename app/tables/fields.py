"""Field kinds: their SQL column types, how a value is read from text or JSON, and how it is shown."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy import BigInteger, Boolean, Date, Integer, Numeric, String, Text
from sqlalchemy.types import TypeDecorator, TypeEngine

from app.models.base import UTCDateTime
from app.models.tables import DataField

KINDS: dict[str, str] = {
    "text": "Text",
    "long_text": "Long text",
    "integer": "Integer",
    "decimal": "Decimal",
    "boolean": "Yes / no",
    "date": "Date",
    "datetime": "Date and time",
    "choice": "Choice",
    "link": "Link to another table",
}
TEXT_KINDS = ("text", "long_text", "choice")
NUMBER_KINDS = ("integer", "decimal", "link")
SYSTEM_COLUMNS = ("id", "created_at", "updated_at")
NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
TEXT_MAX, LONG_TEXT_MAX, CHOICE_MAX = 500, 20_000, 200
DECIMAL_DIGITS, DECIMAL_PLACES = 18, 6
INTEGER_LIMIT = 2**63 - 1
TRUE_WORDS = frozenset(("true", "yes", "y", "on", "1"))
FALSE_WORDS = frozenset(("false", "no", "n", "off", "0"))


class DecimalType(TypeDecorator):
    """NUMERIC(18, 6) that comes back as Decimal everywhere (SQLite stores it as a float)."""

    impl = Numeric(DECIMAL_DIGITS, DECIMAL_PLACES)
    cache_ok = True

    def load_dialect_impl(self, dialect):
        # SQLAlchemy warns when asked for Decimals from SQLite; convert ourselves instead.
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Numeric(DECIMAL_DIGITS, DECIMAL_PLACES, asdecimal=False))
        return dialect.type_descriptor(Numeric(DECIMAL_DIGITS, DECIMAL_PLACES))

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        # The same value reads the same on both databases: no float noise, no padding zeros.
        return Decimal(plain_decimal(value if isinstance(value, Decimal) else Decimal(repr(value))))


def column_type(kind: str) -> TypeEngine:
    """Return the SQL column type of a field kind."""
    return {
        "text": String(TEXT_MAX),
        "long_text": Text(),
        "integer": BigInteger(),
        "decimal": DecimalType(),
        "boolean": Boolean(),
        "date": Date(),
        "datetime": UTCDateTime(),
        "choice": String(CHOICE_MAX),
        "link": Integer(),
    }[kind]


def check_name(name: str, what: str = "field") -> str | None:
    """Return why a table or field name is not allowed, or None when it is."""
    if not NAME.match(name or ""):
        return (f"Use 1 to 40 lower-case letters, digits and underscores for the {what} name, "
                "starting with a letter.")
    if what == "field" and name in SYSTEM_COLUMNS:
        return f"{name!r} is kept for the system columns ({', '.join(SYSTEM_COLUMNS)}); choose another name."
    return None


def slugify(text: str) -> str:
    """Turn a label or CSV header into a field name (may still need checking)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")[:40].rstrip("_")
    if slug and not slug[0].isalpha():
        slug = ("f_" + slug)[:40]
    if slug in SYSTEM_COLUMNS:
        slug = f"{slug}_value"
    return slug or "field"


def parse(field: DataField, raw: Any) -> Any:
    """Read a value for the field from form text, CSV text or JSON; raise ValueError saying why not."""
    return parse_kind(field.kind, raw, field.choices or [])


def parse_kind(kind: str, raw: Any, choices: list[str] | tuple[str, ...] = ()) -> Any:
    """Read a value of a field kind; None for empty; raise ValueError with the reason."""
    if raw is None:
        return None
    if isinstance(raw, str):
        if kind != "long_text":
            raw = raw.strip()
        if raw == "":
            return None
    reader = _READERS[kind]
    if kind == "choice":
        return reader(raw, choices)
    return reader(raw)


def _text(raw: Any, limit: int = TEXT_MAX) -> str:
    if isinstance(raw, dict | list):
        raise ValueError("is not text")
    text = str(raw)
    if len(text) > limit:
        raise ValueError(f"is too long ({len(text):,} characters; at most {limit:,})")
    return text


def _integer(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError("is not a whole number")
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, float | Decimal) and raw == int(raw):
        value = int(raw)
    elif isinstance(raw, str) and re.fullmatch(r"[+-]?\d+", raw):
        value = int(raw)
    else:
        raise ValueError(f"{_show(raw)} is not a whole number")
    if abs(value) > INTEGER_LIMIT:
        raise ValueError("is too large")
    return value


def _decimal(raw: Any) -> Decimal:
    if isinstance(raw, bool):
        raise ValueError("is not a number")
    try:
        value = Decimal(str(raw))
    except InvalidOperation:
        raise ValueError(f"{_show(raw)} is not a number") from None
    if not value.is_finite():
        raise ValueError(f"{_show(raw)} is not a number")
    if value.as_tuple().exponent < -DECIMAL_PLACES:
        value = value.quantize(Decimal(1).scaleb(-DECIMAL_PLACES))
    if abs(value) >= Decimal(10) ** (DECIMAL_DIGITS - DECIMAL_PLACES):
        raise ValueError("is too large")
    return value


def _boolean(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    word = str(raw).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"{_show(raw)} is not yes or no")


def _date(raw: Any) -> date:
    if isinstance(raw, datetime):
        return raw.date()
    if isinstance(raw, date):
        return raw
    try:
        return date.fromisoformat(str(raw))
    except ValueError:
        raise ValueError(f"{_show(raw)} is not a date (use YYYY-MM-DD)") from None


def _datetime(raw: Any) -> datetime:
    if isinstance(raw, datetime):
        value = raw
    else:
        try:
            value = datetime.fromisoformat(str(raw))
        except ValueError:
            raise ValueError(f"{_show(raw)} is not a date and time (use YYYY-MM-DD HH:MM)") from None
    # Times without a zone are read as UTC, the zone everything is stored in.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _choice(raw: Any, choices: list[str] | tuple[str, ...]) -> str:
    text = str(raw)
    if text not in choices:
        options = ", ".join(choices) or "(none defined)"
        raise ValueError(f"{_show(raw)} is not one of the choices: {options}")
    return text


def _link(raw: Any) -> int:
    value = _integer(raw)
    if value < 1:
        raise ValueError("is not the id of a row")
    return value


_READERS: dict[str, Any] = {
    "text": _text,
    "long_text": lambda raw: _text(raw, LONG_TEXT_MAX),
    "integer": _integer,
    "decimal": _decimal,
    "boolean": _boolean,
    "date": _date,
    "datetime": _datetime,
    "choice": _choice,
    "link": _link,
}


def display(kind: str, value: Any) -> str:
    """Show a stored value as text."""
    if value is None:
        return ""
    if kind == "boolean":
        return "Yes" if value else "No"
    if isinstance(value, Decimal):
        return plain_decimal(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def form_value(kind: str, value: Any) -> str:
    """Return the value as an HTML input expects it."""
    if value is None:
        return ""
    if kind == "boolean":
        return "yes" if value else "no"
    if kind == "datetime" and isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")
    if isinstance(value, Decimal):
        return plain_decimal(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def jsonable(value: Any) -> Any:
    """Return the value as JSON can hold it (dates as ISO text, decimals as text)."""
    if isinstance(value, Decimal):
        return plain_decimal(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def plain_decimal(value: Decimal) -> str:
    """Show a decimal without exponent or trailing zeros."""
    text = f"{value.normalize():f}"
    return "0" if text in ("-0", "") else text


def _show(raw: Any) -> str:
    text = str(raw)
    return repr(text if len(text) <= 40 else text[:39] + "…")
