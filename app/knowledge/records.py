"""What the vector store returns: records and hits, plain data (no Chroma import), so they cross processes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Record:
    """A stored text with its id and metadata."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit(Record):
    """A record found by meaning; `distance` is cosine distance (0 identical, 1 unrelated, 2 opposite)."""

    distance: float


def to_wire(value: Any) -> Any:
    """Turn a store's answer into plain data (records and hits into tagged dicts), for another process."""
    if isinstance(value, Record):
        return {"__record__": "hit" if isinstance(value, Hit) else "record", **asdict(value)}
    if isinstance(value, list | tuple):
        return [to_wire(item) for item in value]
    return value


def from_wire(value: Any) -> Any:
    """The inverse of `to_wire`."""
    if isinstance(value, dict) and "__record__" in value:
        fields = {key: item for key, item in value.items() if key != "__record__"}
        return Hit(**fields) if value["__record__"] == "hit" else Record(**fields)
    if isinstance(value, list):
        return [from_wire(item) for item in value]
    return value
