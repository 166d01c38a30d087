"""Data tables as real SQL tables: every kind round-trips; fields are added, renamed and removed safely."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from sqlalchemy import inspect

from app.extensions import db
from app.tables.records import get_row, insert_row, validate
from app.tables.schema import (
    SchemaError,
    add_field,
    change_field,
    create_table,
    drop_table,
    get_table,
    remove_field,
)
from tests.tables.factory import make_table


def columns(name: str) -> list[str]:
    return [c["name"] for c in inspect(db.engine).get_columns(f"dt_{name}")]


def test_a_table_is_a_real_sql_table_with_system_columns_and_one_column_per_field(app):
    with app.app_context():
        make_table()
        assert columns("orders") == [
            "id",
            "created_at",
            "updated_at",
            "customer",
            "amount",
            "status",
            "due",
            "paid",
            "qty",
            "notes",
        ]


def test_every_kind_round_trips_exactly(app):
    with app.app_context():
        definition = make_table()
        values, errors = validate(
            definition,
            {
                "customer": "  Ada Lovelace ",
                "amount": "1234.565",
                "status": "open",
                "due": "2026-03-01",
                "paid": "yes",
                "qty": "-3",
                "notes": "two\nlines ",
            },
        )
        assert errors == {}
        row_id = insert_row(definition, values)
        row = get_row(get_table("orders"), row_id)
    assert row["customer"] == "Ada Lovelace"
    assert row["amount"] == Decimal("1234.565") and isinstance(row["amount"], Decimal)
    assert row["status"] == "open" and row["due"] == date(2026, 3, 1)
    assert row["paid"] is True and row["qty"] == -3 and row["notes"] == "two\nlines "
    assert row["created_at"].tzinfo is not None


def test_a_datetime_without_a_zone_is_read_as_utc(app):
    with app.app_context():
        definition = make_table("events", [("at", "At", "datetime", True, None)])
        values, errors = validate(definition, {"at": "2026-05-01T10:30"})
        row = get_row(definition, insert_row(definition, values))
        assert row["at"] == datetime(2026, 5, 1, 10, 30, tzinfo=UTC)
        values, _ = validate(definition, {"at": "2026-05-01T12:30+02:00"})
        assert get_row(definition, insert_row(definition, values))["at"] == datetime(
            2026, 5, 1, 10, 30, tzinfo=UTC
        )


@pytest.mark.parametrize(
    "field, raw, message",
    [
        ("qty", "three", "is not a whole number"),
        ("amount", "12,5", "is not a number"),
        ("status", "lost", "is not one of the choices: open, closed"),
        ("due", "01/03/2026", "is not a date"),
        ("paid", "maybe", "is not yes or no"),
        ("customer", "", "Customer is required"),
        ("customer", "x" * 501, "is too long"),
    ],
)
def test_bad_values_are_refused_with_the_reason(app, field, raw, message):
    with app.app_context():
        definition = make_table()
        _values, errors = validate(definition, {"customer": "Ada", field: raw})
        assert message in errors[field]


def test_names_are_checked_and_reserved_words_are_quoted(app):
    with app.app_context():
        for bad in ("Orders", "1st", "with space", "drop;table", "x" * 41, ""):
            with pytest.raises(SchemaError):
                create_table(bad, "Bad")
        definition = create_table("select", "Select")
        for name in ("order", "from", "user", "group"):
            add_field(definition, name, name.title(), "text")
        with pytest.raises(SchemaError, match="system columns"):
            add_field(definition, "id", "Id", "integer")
        with pytest.raises(SchemaError, match="already has a field"):
            add_field(definition, "order", "Again", "text")
        db.session.commit()
        values, errors = validate(definition, {"order": "1", "from": "a", "user": "b", "group": "c"})
        row = get_row(definition, insert_row(definition, values))
        assert (row["order"], row["from"], row["user"], row["group"]) == ("1", "a", "b", "c")


def test_a_duplicate_table_name_is_refused(app):
    with app.app_context():
        make_table()
        with pytest.raises(SchemaError, match="already exists"):
            create_table("orders", "Again")


def test_renaming_a_field_keeps_its_values_and_removing_it_drops_them(app):
    with app.app_context():
        definition = make_table()
        values, _ = validate(definition, {"customer": "Ada", "qty": "2"})
        row_id = insert_row(definition, values)
        definition = get_table("orders")
        change_field(definition, definition.field("qty"), "quantity", "How many", required=True)
        db.session.commit()
        definition = get_table("orders")
        assert definition.field("quantity").label == "How many" and definition.field("quantity").required
        assert get_row(definition, row_id)["quantity"] == 2
        remove_field(definition, definition.field("quantity"))
        db.session.commit()
        assert "quantity" not in columns("orders") and "qty" not in columns("orders")
        assert get_row(get_table("orders"), row_id)["customer"] == "Ada"


def test_a_failed_schema_change_leaves_nothing_behind(app):
    with app.app_context():
        definition = make_table()
        with pytest.raises(SchemaError):
            add_field(definition, "kind_less", "Broken", "colour")
        db.session.rollback()
        assert "kind_less" not in columns("orders")
        with pytest.raises(SchemaError, match="choices"):
            add_field(get_table("orders"), "size", "Size", "choice", choices=[])


def test_dropping_a_table_drops_its_rows_and_definition(app):
    with app.app_context():
        definition = make_table()
        drop_table(definition)
        db.session.commit()
        assert get_table("orders") is None
        assert "dt_orders" not in inspect(db.engine).get_table_names()


def test_a_link_must_point_at_an_existing_row(app):
    with app.app_context():
        customers = make_table("customers", [("name", "Name", "text", True, None)])
        values, _ = validate(customers, {"name": "Ada"})
        ada = insert_row(customers, values)
        invoices = create_table("invoices", "Invoices")
        add_field(invoices, "customer", "Customer", "link", link_table=get_table("customers"))
        db.session.commit()
        invoices = get_table("invoices")
        assert validate(invoices, {"customer": str(ada)})[1] == {}
        assert "There is no row 999" in validate(invoices, {"customer": "999"})[1]["customer"]
