"""The assistant switch: every assistant route answers 403 FEATURE_DISABLED while it is off; capabilities say so."""

from __future__ import annotations

import inspect
import re

import pytest

from app.assistance import gate
from app.extensions import db
from tests.test_routes import ADMIN, ANONYMOUS, ROUTES, USER, World, call, is_sign_in, methods_of

# Signs that a view works on conversations, runs or turns: it must then be behind the switch.
ASSISTANT_URL = re.compile(r"<(int:)?(conversation_id|run_id|call_id)>")
ASSISTANT_CODE = re.compile(r"\b(turns\.|runtime\.|send_message|start_conversation|get_own_conversation)")


def switch(app, enabled: bool) -> None:
    with app.test_request_context():
        gate.set_assistant_enabled(enabled)
        db.session.commit()


def test_every_route_that_touches_conversations_runs_or_turns_is_gated(app):
    problems = []
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        source = inspect.getsource(inspect.unwrap(view)) if rule.endpoint != "static" else ""
        looks_like_assistant = ASSISTANT_URL.search(rule.rule) or ASSISTANT_CODE.search(source)
        if looks_like_assistant and not gate.is_gated(rule.endpoint) and rule.endpoint not in gate.UNGATED:
            problems.append(rule.endpoint)
    assert not problems, ("these routes work on conversations, runs or turns but are not behind the assistant "
                          "switch: add them to GATED_ENDPOINTS (or their blueprint to GATED_BLUEPRINTS) in "
                          f"app/assistance/gate.py, or to UNGATED with the reason: {sorted(problems)}")


def test_the_gate_names_only_endpoints_that_exist(app):
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    blueprints = {endpoint.rsplit(".", 1)[0] for endpoint in endpoints if "." in endpoint}
    assert gate.GATED_ENDPOINTS <= endpoints, sorted(gate.GATED_ENDPOINTS - endpoints)
    assert set(gate.UNGATED) <= endpoints, sorted(set(gate.UNGATED) - endpoints)
    assert gate.GATED_BLUEPRINTS <= blueprints, sorted(gate.GATED_BLUEPRINTS - blueprints)


def test_with_the_assistant_off_every_gated_route_answers_feature_disabled(app):
    world = World(app)
    switch(app, False)
    gated = [endpoint for endpoint in ROUTES if gate.is_gated(endpoint)]
    assert {"chat.index", "chat.send", "runs.events", "approvals.decide", "data.assistant"} <= set(gated)
    problems = []
    for endpoint in gated:
        access = ROUTES[endpoint]
        role = USER if USER in access.roles else ADMIN
        for method in methods_of(app, endpoint):
            anonymous = call(app, world.clients[ANONYMOUS], endpoint, method, access, world.objects[ANONYMOUS])
            if not is_sign_in(anonymous) and anonymous.status_code != 401:  # the gate tells strangers nothing
                problems.append(f"{method} {endpoint} anonymous: {anonymous.status_code}")
            as_json = call(app, world.clients[role], endpoint, method, access, world.objects[role],
                           headers={"Accept": "application/json"})
            if as_json.status_code != 403 or (as_json.json or {}).get("code") != "FEATURE_DISABLED":
                problems.append(f"{method} {endpoint} JSON: {as_json.status_code}")
            page = call(app, world.clients[role], endpoint, method, access, world.objects[role])
            if page.status_code != 403 or "The assistant is switched off" not in page.get_data(as_text=True):
                problems.append(f"{method} {endpoint} page: {page.status_code}")
            htmx = call(app, world.clients[role], endpoint, method, access, world.objects[role],
                        headers={"HX-Request": "true"})
            if htmx.status_code != 403 or "The assistant is switched off" not in htmx.get_data(as_text=True):
                problems.append(f"{method} {endpoint} htmx: {htmx.status_code}")
    assert not problems, "\n".join(problems)
    switch(app, True)
    back = call(app, world.clients[USER], "chat.index", "GET", ROUTES["chat.index"], world.objects[USER])
    assert back.status_code == 200


def test_routes_outside_the_gate_keep_working_while_it_is_off(app, client, auth):
    auth.login_as("user")
    switch(app, False)
    assert client.get("/data/").status_code == 200
    assert client.get("/api/me/preferences").status_code == 200
    assert client.get("/api/assistant/capabilities").json["data"]["enabled"] is False


def test_an_admin_switches_the_assistant_off_and_on_from_the_admin_page(app, client, auth):
    auth.login_as("admin")
    assert '<input checked id="enabled"' in client.get("/admin/assistant/").text
    assert client.post("/admin/assistant/", data={}).status_code == 302  # an unticked box: off
    assert client.get("/chat/").status_code == 403
    assert '<input id="enabled"' in client.get("/admin/assistant/").text
    client.post("/admin/assistant/", data={"enabled": "y"})
    assert client.get("/chat/").status_code == 200


# --- capabilities ---------------------------------------------------------------------------------

def test_capabilities_of_a_user_with_the_seeded_agents(client, auth):
    auth.login_as("user")
    # The seeded Workspace assistant has the ui_proposals skill.
    assert client.get("/api/assistant/capabilities").json == {"data": {
        "enabled": True, "configured": True, "features": {"help": True, "proposals": True, "streaming": True}}}


def test_capabilities_say_proposals_when_an_agent_of_the_user_has_the_skill(app, client, auth):
    from tests.conftest import make_agent

    with app.app_context():
        make_agent("Proposer", skills=[{"name": "ui_proposals", "config": {}}], roles=["user"])
    auth.login_as("user")
    features = client.get("/api/assistant/capabilities").json["data"]["features"]
    assert features == {"help": True, "proposals": True, "streaming": True}
    switch(app, False)
    assert client.get("/api/assistant/capabilities").json["data"] == {
        "enabled": False, "configured": True, "features": {"help": False, "proposals": False, "streaming": False}}


def test_capabilities_without_an_agent_to_use_are_not_configured(app, client, auth):
    from app.models import Agent

    with app.app_context():
        for agent in db.session.scalars(db.select(Agent)):
            agent.roles = ["admin"]
        db.session.commit()
    auth.login_as("user")
    data = client.get("/api/assistant/capabilities").json["data"]
    assert data["enabled"] is True and data["configured"] is False and not any(data["features"].values())


@pytest.mark.parametrize("accept", ["text/html", "application/json"])
def test_capabilities_are_401_when_not_signed_in_and_403_for_guests(client, auth, accept):
    auth.create("admin")
    response = client.get("/api/assistant/capabilities", headers={"Accept": accept})
    assert response.status_code == 401 and response.json["code"] == "UNAUTHORIZED"
    auth.login_as("guest")
    response = client.get("/api/assistant/capabilities", headers={"Accept": accept})
    assert response.status_code == 403 and response.json["code"] == "FORBIDDEN"


def test_the_data_pages_hide_the_panel_while_off_and_declare_targets_only_to_a_proposing_agent(app, client, auth):
    import html
    import json

    from app.tables.schema import get_table
    from tests.conftest import make_agent
    from tests.tables.factory import make_table

    with app.app_context():
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
        get_table("orders").assistant_agent_id = make_agent("Plain", roles=["user"]).id
        db.session.commit()
    auth.login_as("user")

    def sent_context() -> dict:
        page = client.get("/data/orders").text
        return json.loads(html.unescape(re.search(r'name="context" value="([^"]*)"', page).group(1)))

    assert "proposable" not in sent_context()["page"]
    with app.app_context():
        get_table("orders").assistant_agent_id = make_agent(
            "Proposer", roles=["user"], skills=[{"name": "ui_proposals", "config": {}}]).id
        db.session.commit()
    declared = sent_context()["page"]["proposable"]
    assert [(entry["kind"], entry["current"]) for entry in declared] == [("preference", "table"),
                                                                         ("view_state", "table")]
    switch(app, False)
    assert 'id="assistant"' not in client.get("/data/orders").text
