"""The list's htmx refresh (what Accept on a layout proposal asks for): the records, the Table/Cards toggle and the
page context of the table's assistant, from one response, so nothing on the page still shows the old layout."""

from __future__ import annotations

import html
import json
import re

import pytest

from app.extensions import db
from app.runtime import offline
from app.tables.records import insert_row
from app.tables.schema import get_table
from tests.conftest import make_agent

HTMX = {"HX-Request": "true"}


@pytest.fixture
def assistant(app, scripted_model, orders):
    """Give the orders table an assistant that may propose, and one record to show."""
    with app.app_context():
        definition = get_table("orders")
        insert_row(definition, {"customer": "Ada Lovelace"})
        definition.assistant_agent_id = make_agent(
            "Orders helper", skills=[{"name": "ui_proposals", "config": {}}],
            model_config_id=scripted_model(function=offline.respond)).id
        db.session.commit()


def toggle(page: str) -> dict[str, str]:
    """Return each layout button's aria-pressed, by layout."""
    return {layout: pressed for layout, pressed in re.findall(
        r'<button type="submit" name="layout" value="(\w+)"[^>]*aria-pressed="(\w+)"', page)}


def declared_current(page: str, prefix: str = "assistant") -> dict[str, str]:
    """Return the `current` the panel's page context declares for each proposable target, by kind."""
    found = re.search(rf'<input type="hidden" name="context" value="([^"]*)" data-testid="{prefix}-context"', page)
    context = json.loads(html.unescape(found.group(1)))
    return {entry["kind"]: entry["current"] for entry in context["page"]["proposable"]}


def test_the_htmx_refresh_after_accepting_cards_swaps_the_toggle_with_the_records(app, client, auth, assistant):
    auth.login_as("user")
    before = client.get("/data/orders").text
    assert toggle(before) == {"table": "true", "cards": "false"} and 'hx-swap-oob' not in before
    # What Accept on the preference card does: the preferences API, then the list's refresh.
    assert client.patch("/api/me/preferences", json={"ui": {"defaultListLayout": "cards"}}).status_code == 200
    response = client.get("/data/orders", headers=HTMX)

    assert response.status_code == 200 and "<html" not in response.text
    assert response.text.lstrip().startswith('<section id="records"') and 'data-layout="cards"' in response.text
    form = re.search(r'<form [^>]*id="layout-form"[^>]*>', response.text).group(0)
    assert 'hx-swap-oob="true"' in form
    assert toggle(response.text) == {"table": "false", "cards": "true"}
    assert re.search(r'id="layout-cards"[^>]*class="primary"', response.text)
    # The panel's next message declares the layout now in force, so cards is not proposed again as a change.
    assert re.search(r'<input [^>]*id="assistant-context"[^>]*hx-swap-oob="true"', response.text)
    assert declared_current(response.text) == {"preference": "cards", "view_state": "cards"}


def test_the_htmx_refresh_of_a_view_state_presses_cards_for_this_page_only(app, client, auth, assistant):
    auth.login_as("user")
    response = client.get("/data/orders?layout=cards", headers=HTMX)
    assert 'data-layout="cards"' in response.text and toggle(response.text) == {"table": "false", "cards": "true"}
    # The preference in force is still the stored one; only this list's view is cards.
    assert declared_current(response.text) == {"preference": "table", "view_state": "cards"}
    assert toggle(client.get("/data/orders").text) == {"table": "true", "cards": "false"}
