"""The pure rules (app/policy): no database, so the PostgreSQL pass leaves them out (`once`)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(item.fspath).parent == HERE:
            item.add_marker(pytest.mark.once)
