"""Data-table fixtures."""

from __future__ import annotations

import pytest

from tests.tables.factory import make_table


@pytest.fixture
def orders(app):
    """An orders table that users may read, insert into and update (not delete)."""
    with app.app_context():
        make_table(
            permissions={"read": ["user", "guest"], "insert": ["user"], "update": ["user"], "delete": []}
        )
    return "orders"
