"""Browsing records: paging, sorting, filters, search, columns, the layout preference, record edits."""

from __future__ import annotations

import re

import pytest

from app.extensions import db
from app.models import User
from app.tables.records import get_row, insert_row, validate
from app.tables.schema import get_table
from tests.conftest import PASSWORD
from tests.tables.factory import make_table


def add_rows(app, rows: list[dict], name: str = "orders") -> list[int]:
    with app.app_context():
        definition = get_table(name)
        ids = []
        for data in rows:
            values, errors = validate(definition, data)
            assert errors == {}, errors
            ids.append(insert_row(definition, values))
        return ids


def ids_on(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'id="record-(\d+)" data-testid="record"', page)]


def test_a_user_browses_pages_of_records(app, client, auth, orders):
    add_rows(app, [{"customer": f"C{n:02}", "qty": str(n)} for n in range(1, 31)])
    auth.login_as("user")
    first = client.get("/data/orders")
    assert first.status_code == 200
    assert ids_on(first.text) == list(range(1, 26))
    assert "Page 1 of 2 · 30 records" in first.text
    second = client.get("/data/orders?page=2")
    assert ids_on(second.text) == list(range(26, 31))
    assert ids_on(client.get("/data/orders?page=9").text) == []


def test_sorting_filters_and_search_narrow_the_list(app, client, auth, orders):
    add_rows(
        app,
        [
            {"customer": "Ada", "amount": "30", "status": "open", "qty": "1"},
            {"customer": "Grace", "amount": "10", "status": "closed", "qty": "2"},
            {"customer": "Alan", "amount": "20", "status": "open", "qty": "3", "notes": "call Grace"},
        ],
    )
    auth.login_as("user")
    assert ids_on(client.get("/data/orders?sort=-amount").text) == [1, 3, 2]
    assert ids_on(client.get("/data/orders?sort=customer").text) == [1, 3, 2]
    page = client.get("/data/orders", query_string={"ff": "status", "fo": "eq", "fv": "open"}).text
    assert ids_on(page) == [1, 3] and "Status is open" in page
    # The added filter is now part of every link, and more can be combined.
    both = client.get(
        "/data/orders", query_string={"f": "status:eq:open", "ff": "amount", "fo": "gt", "fv": "25"}
    ).text
    assert ids_on(both) == [1]
    assert ids_on(client.get("/data/orders?q=grace").text) == [2, 3]  # any field, case-insensitive
    assert ids_on(client.get("/data/orders?q=3").text) == [3]  # id or an exact number
    bad = client.get("/data/orders", query_string={"f": "amount:gt:lots"})
    assert bad.status_code == 200 and "amount: &#39;lots&#39; is not a number" in bad.text
    unknown = client.get("/data/orders", query_string={"f": "secret:eq:1"})
    assert "A filter did not fit this table" in unknown.text and ids_on(unknown.text) == [1, 2, 3]


def test_column_choice_shows_only_the_chosen_fields(app, client, auth, orders):
    add_rows(app, [{"customer": "Ada", "amount": "5", "notes": "secret-note"}])
    auth.login_as("user")
    page = client.get("/data/orders", query_string={"c": ["customer", "amount"]}).text
    assert 'data-field="customer"' in page and 'data-field="amount"' in page
    assert 'data-field="notes"' not in page.split('id="records"')[1]


def test_the_cards_layout_is_a_preference_that_survives_signing_out(app, client, auth, orders):
    add_rows(app, [{"customer": "Ada"}])
    user_id = auth.login_as("user")
    assert 'data-layout="table"' in client.get("/data/orders").text
    response = client.post("/data/orders/layout", data={"layout": "cards", "next": "/data/orders?q=Ada"})
    assert response.status_code == 302 and response.location.endswith("/data/orders?q=Ada")
    assert 'data-layout="cards"' in client.get("/data/orders").text
    with app.app_context():
        email = db.session.get(User, user_id).email
        assert db.session.get(User, user_id).preferences["ui"]["defaultListLayout"] == "cards"
    auth.logout()
    auth.login(email, PASSWORD)
    page = client.get("/data/orders").text
    assert 'data-layout="cards"' in page and 'id="record-cards"' in page
    assert client.post("/data/orders/layout", data={"layout": "grid"}).status_code == 400
    evil = client.post("/data/orders/layout", data={"layout": "table", "next": "https://evil.example/"})
    assert evil.location.endswith("/data/orders")


def test_a_record_is_edited_with_errors_beside_the_fields_first(app, client, auth, orders):
    [row_id] = add_rows(app, [{"customer": "Ada", "qty": "1"}])
    auth.login_as("user")
    page = client.get(f"/data/orders/{row_id}")
    assert page.status_code == 200 and 'id="record-form"' in page.text and 'value="Ada"' in page.text
    bad = client.post(f"/data/orders/{row_id}", data={"customer": "", "qty": "many", "status": "open"})
    assert bad.status_code == 422
    assert 'id="field-customer-error"' in bad.text and "Customer is required." in bad.text
    assert 'id="field-qty-error"' in bad.text and "is not a whole number" in bad.text
    assert 'value="many"' in bad.text  # what was typed stays in the field
    with app.app_context():
        assert get_row(get_table("orders"), row_id)["qty"] == 1
    good = client.post(f"/data/orders/{row_id}", data={"customer": "Ada L.", "qty": "2", "paid": "yes"})
    assert good.status_code == 302
    with app.app_context():
        row = get_row(get_table("orders"), row_id)
        assert (row["customer"], row["qty"], row["paid"]) == ("Ada L.", 2, True)


def test_record_edits_over_htmx_answer_with_the_form_fragment(app, client, auth, orders):
    [row_id] = add_rows(app, [{"customer": "Ada"}])
    auth.login_as("user")
    headers = {"HX-Request": "true"}
    bad = client.post(f"/data/orders/{row_id}", data={"customer": ""}, headers=headers)
    assert bad.status_code == 422 and bad.text.lstrip().startswith("{#") is False
    assert bad.text.strip().startswith('<form id="record-form"') and "Customer is required." in bad.text
    good = client.post(f"/data/orders/{row_id}", data={"customer": "Grace"}, headers=headers)
    assert good.status_code == 200 and 'id="record-saved"' in good.text and 'value="Grace"' in good.text


def test_new_records_and_deletes_follow_the_permissions(app, client, auth, orders):
    auth.login_as("user")
    assert client.get("/data/orders/new").status_code == 200
    response = client.post("/data/orders", data={"customer": "Ada", "amount": "1.5"})
    assert response.status_code == 302
    row_id = int(response.location.rsplit("/", 1)[-1])
    assert client.post("/data/orders", data={"amount": "x"}).status_code == 422
    assert client.post(f"/data/orders/{row_id}/delete").status_code == 403  # users may not delete orders
    auth.logout()
    auth.login_as("admin")
    assert client.post(f"/data/orders/{row_id}/delete").status_code == 302
    assert client.get(f"/data/orders/{row_id}").status_code == 404


def test_guests_only_read_and_unreadable_tables_are_not_found(app, client, auth, orders):
    with app.app_context():
        make_table(
            "payroll",
            [("name", "Name", "text", True, None)],
            permissions={"read": [], "insert": [], "update": [], "delete": []},
        )
    [row_id] = add_rows(app, [{"customer": "Ada"}])
    auth.login_as("guest")
    assert client.get("/data/orders").status_code == 200
    page = client.get(f"/data/orders/{row_id}").text
    assert "readonly" in page and 'id="record-save"' not in page
    assert client.post(f"/data/orders/{row_id}", data={"customer": "X"}).status_code == 403
    assert client.get("/data/orders/new").status_code == 403
    assert client.get("/data/payroll").status_code == 404
    listing = client.get("/data/").text
    assert 'id="data-table-orders"' in listing and "payroll" not in listing


@pytest.mark.parametrize("path", ["/data/missing", "/data/missing/1", "/data/orders/999"])
def test_missing_tables_and_records_are_404(app, client, auth, orders, path):
    auth.login_as("user")
    assert client.get(path).status_code == 404


def test_huge_tables_are_counted_only_up_to_a_limit_and_still_page(app, client, auth, orders, monkeypatch):
    from app.tables import records

    monkeypatch.setattr(records, "COUNT_LIMIT", 30)
    add_rows(app, [{"customer": f"C{n:02}"} for n in range(1, 61)])
    auth.login_as("user")
    first = client.get("/data/orders").text
    assert "Page 1 · more than 30 records" in first and 'rel="next"' in first
    third = client.get("/data/orders?page=3").text
    assert ids_on(third) == list(range(51, 61)) and 'rel="next"' not in third
    assert ids_on(client.get("/data/orders?q=C0").text) == list(range(1, 10))
