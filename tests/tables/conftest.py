"""Data-table fixtures."""

from __future__ import annotations

import pytest

from tests.tables.factory import make_table


@pytest.fixture(autouse=True)
def _imports_in_tmp(app, tmp_path):
    """Keep CSV uploads waiting for confirmation out of the instance folder."""
    app.config["IMPORTS_PATH"] = str(tmp_path / "imports")


@pytest.fixture
def orders(app):
    """An orders table that users may read, insert into and update (not delete)."""
    with app.app_context():
        make_table(
            permissions={"read": ["user", "guest"], "insert": ["user"], "update": ["user"], "delete": []}
        )
    return "orders"
