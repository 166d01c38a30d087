"""CSV import and export over HTTP: kinds inferred and confirmed, bad rows by line, nothing stored early."""

from __future__ import annotations

import csv
import io
import re

from app.extensions import db
from app.tables.records import get_row, insert_row, page_of_rows, select_rows, validate
from app.tables.schema import create_table, get_table
from tests.tables.factory import make_table

GOOD = """name,amount,qty,due,paid,notes
Ada,12.50,3,2026-01-05,yes,first
Grace,7,1,2026-02-01,no,"multi
line"
Linus,0.99,12,2026-03-10,true,
"""
BAD = (
    GOOD
    + """Ken,lots,2,2026-04-01,no,bad amount
Dennis,3.5,1,soon,no,bad date
"""
)


def upload(client, table: str, text: str, name: str = "data.csv"):
    return client.post(
        f"/admin/tables/{table}/import",
        data={"file": (io.BytesIO(text.encode()), name)},
        content_type="multipart/form-data",
    )


def confirm_data(page: str) -> dict:
    """Read the confirm form of a preview: the token and the kind shown for each new column."""
    data = {"token": re.search(r'name="token" value="([0-9a-f]+)"', page).group(1)}
    for index, kind in re.findall(r'name="shown-(\d+)" value="(\w+)"', page):
        data[f"shown-{index}"] = kind
        data[f"kind-{index}"] = kind
    return data


def count(app, name: str) -> int:
    with app.app_context():
        definition = get_table(name)
        return page_of_rows(definition, select_rows(definition), 1, 1).total


def test_preview_infers_kinds_lists_bad_rows_by_line_and_imports_nothing(app, client, auth):
    auth.login_as("admin")
    with app.app_context():
        create_table("people", "People")
        db.session.commit()
    page = upload(client, "people", BAD)
    assert page.status_code == 200
    text = page.text
    for header, kind in (
        ("name", "Text"),
        ("amount", "Decimal"),
        ("qty", "Integer"),
        ("due", "Date"),
        ("paid", "Yes / no"),
        ("notes", "Long text"),
    ):
        assert re.search(
            rf'data-testid="kind-{header}".*?<option value="\w+" selected>{re.escape(kind)} '
            r"\(inferred\)",
            text,
            re.S,
        ), header
    # The multi-line record counts as one; lines are those of the file.
    assert 'id="bad-row-6"' in text and "amount: &#39;lots&#39; is not a number" in text
    assert 'id="bad-row-7"' in text and "due: &#39;soon&#39; is not a date" in text
    assert "<strong>3</strong> rows can be imported; <strong>2</strong> cannot" in text
    with app.app_context():
        assert get_table("people").fields == []  # nothing created yet

    refused = client.post("/admin/tables/people/import/confirm", data=confirm_data(text))
    assert refused.status_code == 422 and "Nothing was imported" in refused.text
    with app.app_context():
        assert get_table("people").fields == []


def test_the_fixed_file_is_imported_once_confirmed(app, client, auth):
    auth.login_as("admin")
    with app.app_context():
        create_table("people", "People")
        db.session.commit()
    fixed = BAD.replace("Ken,lots", "Ken,4").replace("1,soon", "1,2026-05-01")
    preview = upload(client, "people", fixed)
    assert "<strong>5</strong> rows can be imported." in preview.text
    response = client.post("/admin/tables/people/import/confirm", data=confirm_data(preview.text))
    assert response.status_code == 302 and response.location.endswith("/data/people")
    with app.app_context():
        definition = get_table("people")
        assert [(f.name, f.kind) for f in definition.fields] == [
            ("name", "text"),
            ("amount", "decimal"),
            ("qty", "integer"),
            ("due", "date"),
            ("paid", "boolean"),
            ("notes", "long_text"),
        ]
        rows = page_of_rows(definition, select_rows(definition), 1, 10).items
        assert [r["name"] for r in rows] == ["Ada", "Grace", "Linus", "Ken", "Dennis"]
        assert (
            str(rows[0]["amount"]) == "12.5" and rows[1]["notes"] == "multi\nline" and rows[2]["paid"] is True
        )
    assert "Imported 5 rows." in client.get("/data/people").text


def test_skipping_the_bad_rows_imports_the_others(app, client, auth):
    auth.login_as("admin")
    with app.app_context():
        create_table("people", "People")
        db.session.commit()
    data = confirm_data(upload(client, "people", BAD).text)
    assert (
        client.post("/admin/tables/people/import/confirm", data={**data, "skip_bad": "1"}).status_code == 302
    )
    assert count(app, "people") == 3


def test_changing_a_kind_shows_the_preview_again_before_anything_is_stored(app, client, auth):
    auth.login_as("admin")
    with app.app_context():
        create_table("people", "People")
        db.session.commit()
    data = confirm_data(upload(client, "people", GOOD).text)
    data["kind-2"] = "text"  # qty as text
    again = client.post("/admin/tables/people/import/confirm", data=data)
    assert again.status_code == 200 and "You changed a kind" in again.text
    with app.app_context():
        assert get_table("people").fields == []
    data = confirm_data(again.text)
    assert data["kind-2"] == "text"
    assert client.post("/admin/tables/people/import/confirm", data=data).status_code == 302
    with app.app_context():
        assert get_table("people").field("qty").kind == "text"


def test_importing_into_existing_fields_checks_their_kinds_and_required_fields(app, client, auth, orders):
    auth.login_as("admin")
    preview = upload(client, "orders", "Customer,amount,status\nAda,1,open\n,2,open\nBob,3,lost\n")
    text = preview.text
    assert 'id="bad-row-3"' in text and "a value is required" in text
    assert 'id="bad-row-4"' in text and "not one of the choices" in text
    missing = upload(client, "orders", "amount\n1\n")
    assert "no column for the required field" in missing.text and "disabled" in missing.text


def test_a_file_that_is_not_utf8_is_refused_beside_the_file_field(app, client, auth, orders):
    auth.login_as("admin")
    response = client.post(
        "/admin/tables/orders/import",
        data={"file": (io.BytesIO("name\nJosé\n".encode("latin-1")), "x.csv")},
        content_type="multipart/form-data",
    )
    assert response.status_code == 422 and "not UTF-8" in response.text and 'id="file-error"' in response.text


def test_export_writes_every_row_and_defuses_spreadsheet_formulas(app, client, auth, orders):
    auth.login_as("admin")
    with app.app_context():
        definition = get_table("orders")
        for customer in ("Ada", '=HYPERLINK("http://evil")'):
            values, _ = validate(definition, {"customer": customer, "amount": "-5", "paid": "yes"})
            insert_row(definition, values)
    response = client.get("/admin/tables/orders/export.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert 'filename="orders.csv"' in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [r["customer"] for r in rows] == ["Ada", '\'=HYPERLINK("http://evil")']
    assert rows[0]["amount"] == "-5" and rows[0]["paid"] == "true" and rows[0]["id"] == "1"


FORMULAS = ["=1+2", "+1", "-5", "@SUM(A1)", "'=quoted already", "''-twice", "'plain", "Ada"]


def test_formulas_are_defused_on_export_and_import_back_exactly(app, client, auth):
    auth.login_as("admin")
    fields = [("name", "Name", "text", True, None), ("score", "Score", "decimal", False, None)]
    with app.app_context():
        make_table("source", fields)
        definition = get_table("source")
        for name in FORMULAS:
            insert_row(definition, validate(definition, {"name": name, "score": "-2.5"})[0])
        make_table("copy", fields)
    exported = client.get("/admin/tables/source/export.csv").text
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert [r["name"] for r in rows] == ["'" + name if name != "'plain" and name != "Ada" else name
                                         for name in FORMULAS]
    assert {r["score"] for r in rows} == {"-2.5"}  # a negative number stays a number
    preview = upload(client, "copy", exported)
    assert client.post("/admin/tables/copy/import/confirm", data=confirm_data(preview.text)).status_code == 302
    with app.app_context():
        copy = get_table("copy")
        imported = page_of_rows(copy, select_rows(copy), 1, 20).items
        assert [r["name"] for r in imported] == FORMULAS  # no doubled prefix, no quote lost
        assert {str(r["score"]) for r in imported} == {"-2.5"}


def test_an_export_imports_back_into_an_empty_copy(app, client, auth):
    auth.login_as("admin")
    with app.app_context():
        make_table(
            "source", [("name", "Name", "text", True, None), ("score", "Score", "decimal", False, None)]
        )
        definition = get_table("source")
        for name, score in (("a", "1.5"), ("b", "")):
            insert_row(definition, validate(definition, {"name": name, "score": score})[0])
        make_table("copy", [("name", "Name", "text", True, None), ("score", "Score", "decimal", False, None)])
    exported = client.get("/admin/tables/source/export.csv").text
    preview = upload(client, "copy", exported)
    assert "id, created_at, updated_at" in preview.text  # left out, rows get new ids
    assert (
        client.post("/admin/tables/copy/import/confirm", data=confirm_data(preview.text)).status_code == 302
    )
    with app.app_context():
        copy = get_table("copy")
        assert [(r["name"], r["score"]) for r in page_of_rows(copy, select_rows(copy), 1, 5).items] == [
            ("a", get_row(get_table("source"), 1)["score"]),
            ("b", None),
        ]
