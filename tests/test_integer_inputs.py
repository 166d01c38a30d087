"""Integers past the database's range, on every route: never a 500 (defect 10 of issue 10).

Ids are PostgreSQL `integer`s; SQLite raises OverflowError past 2**63 - 1 and PostgreSQL "integer out
of range" past 2**31 - 1. The app reads integers through one route converter and one argument parser
(`app/web/integers.py`). These tests walk `app.url_map` and the route table of `tests/test_routes.py`,
so a route or an integer argument added later is covered without a new test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from werkzeug.routing import IntegerConverter

from app.web.integers import ID_MAX
from tests.test_routes import ADMIN, ROUTES, USER, World, methods_of, resolve

PAST_POSTGRESQL = str(ID_MAX + 1)  # 2147483648
PAST_SQLITE = str(2**63)  # 9223372036854775808
HUGE = "9" * 40
OUT_OF_RANGE = (PAST_POSTGRESQL, PAST_SQLITE, HUGE)
NOT_INTEGERS = ("abc", "-1", "1.5", "0x10", "%20")
# Integers read from query strings, forms and headers besides the ids named in routes.
QUERY_NUMBERS = ("page", "per_page", "perPage", "before", "after", "tries", "limit", "passage", "table")
# Ids that forms choose from a list (SelectField(coerce=int)) under names no route uses.
FORM_IDS = ("table_id", "link_table", "run_as_id", "assistant_agent_id", "model_config_id")


def integer_arguments(app) -> dict[str, set[str]]:
    """Each endpoint with integer route parameters, and the names of those parameters."""
    found: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        names = {name for name, converter in rule._converters.items() if isinstance(converter, IntegerConverter)}
        if names:
            found.setdefault(rule.endpoint, set()).update(names)
    return found


def id_names(app) -> set[str]:
    """Every id name of the app: the integer parameters of its routes (agent_id, conversation_id, ...)."""
    return set().union(*integer_arguments(app).values())


def path_of(app, endpoint: str, values: dict[str, object]) -> str:
    """The path of an endpoint with these values, integer parameters included as raw text."""
    [rule] = [r for r in app.url_map.iter_rules(endpoint)][:1]
    path = rule.rule
    for name in rule.arguments:
        path = path.replace(f"<int:{name}>", str(values[name])).replace(f"<{name}>", str(values[name]))
        path = path.replace(f"<path:{name}>", str(values[name]))
    return path


@pytest.fixture
def world(app) -> World:
    return World(app)


def test_every_integer_the_app_reads_is_walked(app):
    """Each `.get("name", ..., type=int)` in app/ names an argument the walks below send out of range."""
    read = set()
    for path in Path(app.root_path).rglob("*.py"):
        read |= set(re.findall(r'(?:args|form)\.get\("(\w+)"[^)\n]*type=int', path.read_text()))
    missing = sorted(read - set(QUERY_NUMBERS) - set(FORM_IDS) - id_names(app))
    assert not missing, f"add these integer arguments to QUERY_NUMBERS in tests/test_integer_inputs.py: {missing}"


def test_the_route_table_has_integer_routes(app):
    assert len(integer_arguments(app)) > 30  # the walk below is not vacuous


def test_ids_out_of_range_are_404_and_non_integers_never_fail_on_every_route(app, world):
    problems: list[str] = []
    client = world.clients[ADMIN]
    for endpoint, names in sorted(integer_arguments(app).items()):
        access = ROUTES[endpoint]
        objects = resolve(access.args, world.objects[ADMIN])
        for method in methods_of(app, endpoint):
            for bad in OUT_OF_RANGE + NOT_INTEGERS:
                for name in sorted(names):
                    path = path_of(app, endpoint, {**objects, name: bad})
                    response = client.open(path, method=method, data=resolve(access.data, world.objects[ADMIN]))
                    response.close()
                    # 404 also where another rule has the same path for other methods: Werkzeug checks
                    # the method before the converter, and an id that names nothing is not a 405.
                    if response.status_code >= 500 or (bad in OUT_OF_RANGE and response.status_code != 404):
                        problems.append(f"{method} {path}: {response.status_code}")
    assert not problems, "\n".join(["integer route parameters that are not 404:", *problems])


def test_the_largest_id_reaches_the_database_and_is_404(app, world):
    """ID_MAX itself passes the converter: the database must take it (PostgreSQL's integer does)."""
    client = world.clients[ADMIN]
    for endpoint, names in sorted(integer_arguments(app).items()):
        access = ROUTES[endpoint]
        objects = resolve(access.args, world.objects[ADMIN])
        for method in methods_of(app, endpoint):
            for name in names:
                path = path_of(app, endpoint, {**objects, name: ID_MAX})
                response = client.open(path, method=method, data=resolve(access.data, world.objects[ADMIN]))
                response.close()
                assert response.status_code < 500, f"{method} {path}: {response.status_code}"


@pytest.mark.parametrize("bad", [PAST_POSTGRESQL, PAST_SQLITE, HUGE, "-5", "abc"])
def test_integer_arguments_out_of_range_never_fail(app, world, bad):
    """Every route, as a user and as an admin, with every integer argument out of range: no 5xx."""
    names = id_names(app) | set(QUERY_NUMBERS) | set(FORM_IDS)
    problems: list[str] = []
    for endpoint, access in ROUTES.items():
        for role in (USER, ADMIN):
            objects = world.objects[role]
            for method in methods_of(app, endpoint):
                path = path_of(app, endpoint, resolve(access.args, objects)) if access.args else None
                if path is None:
                    [rule] = list(app.url_map.iter_rules(endpoint))[:1]
                    path = rule.rule
                query = {name: bad for name in (*QUERY_NUMBERS, "q")}  # a search for a number, too
                data = {**resolve(access.data, objects), **{name: bad for name in names}} if method == "POST" else None
                response = world.clients[role].open(path, method=method, query_string=query, data=data,
                                                    headers={"Last-Event-ID": bad})
                response.get_data()
                response.close()
                if response.status_code >= 500:
                    problems.append(f"{role} {method} {path} ({endpoint}): {response.status_code}")
        if access.changes:
            world.renew()
    assert not problems, "\n".join([f"routes that fail on integer arguments = {bad}:", *problems])


def test_an_agent_id_out_of_range_names_no_agent(app, auth, client):
    auth.login_as("user")
    for bad in OUT_OF_RANGE:
        assert client.post("/chat/", data={"agent_id": bad}).status_code == 404


def test_a_page_out_of_range_is_the_first_page(app, auth, client):
    auth.login_as("admin")
    for bad in OUT_OF_RANGE:
        assert client.get(f"/admin/users?page={bad}").status_code == 200
        assert client.get(f"/chat/sidebar?page={bad}").status_code == 200


@pytest.mark.parametrize("bad", [ID_MAX + 1, 2**63, 10**30])
def test_ids_out_of_range_in_json_bodies_are_422_naming_the_field(app, world, bad):
    """`agentId`, `threadId` and `callId` past the range name nothing: 422 on the field, never a 500."""
    client, objects = world.clients[USER], world.objects[USER]
    bodies = {"/api/conversations": ("agentId", {}),
              "/api/agent": ("threadId", {"message": "Hi"}),
              f"/api/conversations/{objects['conversation']}/answers": ("callId", {"answer": "The first"})}
    problems = []
    for path, (name, body) in bodies.items():
        response = client.post(path, json={**body, name: bad})
        response.close()
        if response.status_code != 422 or name not in (response.json or {}).get("fields", {}):
            problems.append(f"POST {path} {name}={bad}: {response.status_code}")
    assert not problems, "\n".join(["ids in JSON bodies that were not 422:", *problems])
