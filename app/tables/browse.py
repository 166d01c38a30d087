"""The list page's query from the URL (search, filters, sorting, columns, page).

Filters travel in the URL as repeated `f=<field>:<operator>:<value>`, so every state of the page
is a link that works without JavaScript; the "add a filter" form sends `ff`, `fo` and `fv`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from werkzeug.datastructures import MultiDict

from app.models import DataTable
from app.tables.records import (
    OPERATORS,
    BadFilter,
    Filter,
    RowPagination,
    UnknownField,
    link_titles,
    page_of_rows,
    select_rows,
)

PER_PAGE = 25
DEFAULT_COLUMNS = 6


@dataclass
class ListQuery:
    search: str = ""
    filters: list[Filter] = field(default_factory=list)
    sort: str = "id"
    columns: list[str] = field(default_factory=list)
    page: int = 1
    per_page: int = PER_PAGE
    problems: list[str] = field(default_factory=list)

    def args(self, **changes: Any) -> dict[str, Any]:
        """Return the URL arguments of this query, with some changed (for links)."""
        args: dict[str, Any] = {"q": self.search or None, "sort": self.sort if self.sort != "id" else None,
                                "f": [f"{f.field}:{f.op}:{f.value or ''}" for f in self.filters] or None,
                                "c": self.columns or None, "page": self.page if self.page != 1 else None}
        args.update(changes)
        return {key: value for key, value in args.items() if value is not None}

    def without_filter(self, index: int) -> dict[str, Any]:
        """Return the URL arguments with one filter removed."""
        kept = [f"{f.field}:{f.op}:{f.value or ''}" for i, f in enumerate(self.filters) if i != index]
        return self.args(f=kept or None, page=None)


def read_list_query(definition: DataTable, args: MultiDict) -> ListQuery:
    """Read the list query from the URL; what does not fit the table is dropped and said in `problems`."""
    query = ListQuery(search=(args.get("q") or "").strip()[:200])
    raw_filters = [item.split(":", 2) for item in args.getlist("f")]
    if args.get("ff"):
        raw_filters.append([args.get("ff", ""), args.get("fo", "eq"), args.get("fv", "")])
    names = {f.name for f in definition.fields} | {"id", "created_at", "updated_at"}
    for parts in raw_filters[:10]:
        if len(parts) < 2 or parts[0] not in names or parts[1] not in OPERATORS:
            query.problems.append("A filter did not fit this table and was left out.")
            continue
        query.filters.append(Filter(parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
    sort = args.get("sort") or "id"
    query.sort = sort if sort.lstrip("-") in names else "id"
    query.columns = [c for c in args.getlist("c") if c in names and c != "id"]
    query.page = max(1, args.get("page", 1, type=int) or 1)
    query.per_page = min(100, max(1, args.get("per_page", PER_PAGE, type=int) or PER_PAGE))
    return query


def shown_columns(definition: DataTable, query: ListQuery) -> list:
    """Return the fields the list shows: the chosen ones, else the first few."""
    if query.columns:
        return [f for f in definition.fields if f.name in query.columns]
    return list(definition.fields[:DEFAULT_COLUMNS])


def list_rows(definition: DataTable, query: ListQuery) -> tuple[RowPagination | None, dict[str, dict]]:
    """Return the page of rows and the titles of linked rows by field; None when the query is bad."""
    try:
        select = select_rows(definition, query.search, query.filters, query.sort)
    except (UnknownField, BadFilter) as error:
        query.problems.append(str(error))
        return None, {}
    page = page_of_rows(definition, select, query.page, query.per_page)
    titles = {}
    for link in (f for f in shown_columns(definition, query) if f.kind == "link"):
        ids = {row[link.name] for row in page.items if row.get(link.name) is not None}
        titles[link.name] = link_titles(link, ids)
    return page, titles
