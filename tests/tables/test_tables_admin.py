"""Table administration over HTTP: tables, fields added, renamed, removed, permissions, who may reach it."""

from __future__ import annotations

import re

import pytest

from app.extensions import db
from app.models import DataTable
from app.tables.schema import get_table
from tests.conftest import make_agent


def test_an_admin_creates_a_table_and_adds_typed_fields(app, client, auth):
    auth.login_as("admin")
    response = client.post("/admin/tables/", data={"name": "tickets", "label": "Tickets"})
    assert response.status_code == 302 and response.location.endswith("/admin/tables/tickets")
    for name, kind, extra in (
        ("subject", "text", {"field-required": "y"}),
        ("body", "long_text", {}),
        ("priority", "choice", {"field-choices": "low\nhigh\n"}),
        ("opened", "date", {}),
    ):
        response = client.post(
            "/admin/tables/tickets/fields",
            data={"field-name": name, "field-label": name.title(), "field-kind": kind, **extra},
        )
        assert response.status_code == 302, response.text
    page = client.get("/admin/tables/tickets")
    assert page.status_code == 200
    assert 'id="new-field-form"' in page.text and "Subject" in page.text
    with app.app_context():
        definition = get_table("tickets")
        assert [(f.name, f.kind) for f in definition.fields] == [
            ("subject", "text"),
            ("body", "long_text"),
            ("priority", "choice"),
            ("opened", "date"),
        ]
        assert definition.field("subject").required and definition.field("priority").choices == [
            "low",
            "high",
        ]


def test_a_bad_table_name_is_shown_beside_the_field_with_422(app, client, auth):
    auth.login_as("admin")
    response = client.post("/admin/tables/", data={"name": "Bad Name", "label": "Bad"})
    assert response.status_code == 422
    assert 'id="name-error"' in response.text and "lower-case letters" in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(DataTable.id))) == 0


def test_a_choice_field_without_choices_is_refused_beside_the_choices(app, client, auth, orders):
    auth.login_as("admin")
    response = client.post(
        "/admin/tables/orders/fields",
        data={"field-name": "size", "field-label": "Size", "field-kind": "choice"},
    )
    assert response.status_code == 422
    assert 'id="field-choices-error"' in response.text and "List the choices" in response.text


def test_renaming_and_removing_fields_over_http(app, client, auth, orders):
    auth.login_as("admin")
    with app.app_context():
        qty = get_table("orders").field("qty").id
    response = client.post(
        f"/admin/tables/orders/fields/{qty}", data={f"f{qty}-name": "quantity", f"f{qty}-label": "Quantity"}
    )
    assert response.status_code == 302
    bad = client.post(
        f"/admin/tables/orders/fields/{qty}", data={f"f{qty}-name": "customer", f"f{qty}-label": "x"}
    )
    assert bad.status_code == 422 and "already has a field" in bad.text
    assert client.post(f"/admin/tables/orders/fields/{qty}/delete").status_code == 302
    with app.app_context():
        assert get_table("orders").field("quantity") is None


def test_permissions_and_the_assistant_are_saved(app, client, auth, orders):
    auth.login_as("admin")
    with app.app_context():
        agent_id = make_agent("Orders helper").id
    response = client.post(
        "/admin/tables/orders",
        data={
            "settings-label": "Customer orders",
            "settings-description": "",
            "settings-assistant_agent_id": agent_id,
            "perm-read": ["user", "guest"],
            "perm-insert": ["user", "guest"],
            "perm-delete": ["user"],
        },
    )
    assert response.status_code == 302, response.text
    with app.app_context():
        definition = get_table("orders")
        # Guests may only ever read: a forged insert permission for them is dropped.
        assert definition.permissions == {
            "read": ["user", "guest"],
            "insert": ["user"],
            "update": [],
            "delete": ["user"],
        }
        assert definition.assistant_agent_id == agent_id and definition.label == "Customer orders"


def test_deleting_a_table_needs_its_name_typed(app, client, auth, orders):
    auth.login_as("admin")
    client.post("/admin/tables/orders/delete", data={"confirm": "nope"})
    with app.app_context():
        assert get_table("orders") is not None
    assert client.post("/admin/tables/orders/delete", data={"confirm": "orders"}).status_code == 302
    with app.app_context():
        assert get_table("orders") is None


@pytest.mark.parametrize("role", ["user", "guest"])
@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/admin/tables/"),
        ("post", "/admin/tables/"),
        ("get", "/admin/tables/orders"),
        ("post", "/admin/tables/orders"),
        ("post", "/admin/tables/orders/fields"),
        ("get", "/admin/tables/orders/import"),
        ("get", "/admin/tables/orders/export.csv"),
        ("post", "/admin/tables/orders/delete"),
        ("get", "/admin/triggers/"),
        ("get", "/admin/triggers/new"),
        ("post", "/admin/triggers/"),
        ("get", "/runs/"),
    ],
)
def test_only_admins_reach_table_trigger_and_run_administration(
    app, client, auth, orders, role, method, path
):
    auth.login_as(role)
    assert getattr(client, method)(path).status_code == 403


def test_signed_out_people_are_sent_to_sign_in(app, client, auth, orders):
    auth.create("admin")  # an install with users: no setup redirect
    for path in ("/admin/tables/", "/data/", "/data/orders", "/runs/", "/admin/triggers/"):
        response = client.get(path)
        assert response.status_code == 302 and "/login" in response.location


def test_the_field_forms_show_the_current_values(app, client, auth, orders):
    auth.login_as("admin")
    with app.app_context():
        status = get_table("orders").field("status").id
    page = client.get("/admin/tables/orders").text
    assert re.search(rf'name="f{status}-choices">\s*open\nclosed</textarea>', page)
    assert re.search(rf'name="f{status}-name"[^>]* value="status"', page)
    response = client.post(
        f"/admin/tables/orders/fields/{status}",
        data={f"f{status}-name": "status", f"f{status}-label": "State",
              f"f{status}-choices": "open\nclosed\nheld"},
    )
    assert response.status_code == 302
    with app.app_context():
        assert get_table("orders").field("status").choices == ["open", "closed", "held"]
