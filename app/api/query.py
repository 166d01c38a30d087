"""Query parameters and headers of the JSON API, read strictly: what the document declares, or 422 naming them."""

from __future__ import annotations

import re

from app.api.errors import ApiError
from app.models.base import ID_MAX

MAX_PER_PAGE = 100
_WHOLE = re.compile(r"[0-9]{1,10}")


def whole_number(name: str, given: str | None, default: int, low: int, high: int) -> int:
    """A parameter's text as a whole number from `low` to `high` (`default` when absent); 422 for anything else.

    Strict, unlike `request.args.get(..., type=int)`, which reads "+1", " 1" or "1_0" and falls back to
    the default for what is not a number: the document declares an integer in a range (app/api/openapi.py).
    """
    if given is None:
        return default
    number = int(given) if _WHOLE.fullmatch(given) else None
    if number is None or not low <= number <= high:
        raise ApiError(422, f"{name} is a whole number from {low} to {high}.", fields={name: f"{low} to {high}"})
    return number


def paging(page: str | None, per_page: str | None) -> tuple[int, int]:
    """`?page=&perPage=` of a listing (`PageQuery` in the document): 30 a page by default, MAX_PER_PAGE at most."""
    return whole_number("page", page, 1, 1, ID_MAX), whole_number("perPage", per_page, 30, 1, MAX_PER_PAGE)
