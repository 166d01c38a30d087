"""Placeholders in a case: what only exists once the case runs (a table's id, the address of its pages).

`{table:contacts}` is the id of the case's table `contacts` (its row tools are `…_rows_in_table_<id>`);
`{pages}` is the address the case's pages are served at (`{pages}/notice`). Every string of the case
may hold them: the replies (tool names, arguments, text), the messages, the fixture's rows and
documents, the "never ask" tools and the checks.
"""

from __future__ import annotations

import re
from typing import Any

PLACEHOLDER = re.compile(r"\{(?:table:(?P<table>[A-Za-z0-9_]+)|(?P<pages>pages))\}")


class UnknownPlaceholder(ValueError):
    """A placeholder names a table the case does not create (or pages where none are served)."""


def resolve(value: Any, tables: dict[str, int], pages: str | None) -> Any:
    """Return the value with every placeholder in its strings replaced, walking lists and mappings."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda found: _value(found, tables, pages), value)
    if isinstance(value, list):
        return [resolve(item, tables, pages) for item in value]
    if isinstance(value, dict):
        return {resolve(key, tables, pages): resolve(item, tables, pages) for key, item in value.items()}
    return value


def _value(found: re.Match[str], tables: dict[str, int], pages: str | None) -> str:
    if found.group("pages"):
        if pages is None:
            raise UnknownPlaceholder("{pages} names the case's pages, but none are served")
        return pages
    name = found.group("table")
    if name not in tables:
        raise UnknownPlaceholder(f"{{table:{name}}} names no table of the case's fixture")
    return str(tables[name])
