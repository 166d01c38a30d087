"""JSON bodies nested past any client's need, on every route that takes a body: 400, never a 500.

Python's json module parses recursively, so a body of a few thousand `[` raised RecursionError in
the request check that reads every JSON string (a 500 on every API route, and on webhooks). The walk
goes over the route table of `tests/test_routes.py`, so a route added later is covered too.
"""

from __future__ import annotations

import pytest

from app.web.text_input import MAX_JSON_DEPTH
from tests.test_integer_inputs import path_of
from tests.test_routes import ADMIN, ROUTES, USER, World, methods_of, resolve


def nested(depth: int, inner: str = "") -> str:
    return "[" * depth + inner + "]" * depth


DEEP = (nested(5000), '{"a":' * 900 + "1" + "}" * 900, nested(MAX_JSON_DEPTH + 1))
WRITES = ("POST", "PATCH", "PUT", "DELETE")


@pytest.fixture
def world(app) -> World:
    return World(app)


@pytest.mark.parametrize("body", DEEP, ids=("arrays-5000", "objects-900", "one-past-the-limit"))
def test_a_deeply_nested_json_body_is_400_on_every_route(app, world, body):
    problems: list[str] = []
    for endpoint, access in ROUTES.items():
        writes = [m for m in methods_of(app, endpoint) if m in WRITES]
        for role in (USER, ADMIN):
            for method in writes:
                path = path_of(app, endpoint, resolve(access.args, world.objects[role])) if access.args else \
                    next(app.url_map.iter_rules(endpoint)).rule
                response = world.clients[role].open(path, method=method, data=body,
                                                    content_type="application/json")
                response.get_data()
                response.close()
                if response.status_code >= 500:
                    problems.append(f"{role} {method} {path} ({endpoint}): {response.status_code}")
                elif response.status_code == 400 and path.startswith("/api/"):
                    assert "nested" in response.json["message"], response.json
        if access.changes:
            world.renew()
    assert not problems, "\n".join(["routes that fail on a deeply nested JSON body:", *problems])


def test_a_body_at_the_depth_limit_is_read(app, client, auth):
    auth.login_as("user")
    response = client.patch("/api/me/preferences", data=f'{{"cli": {{"deep": {nested(MAX_JSON_DEPTH - 2)}}}}}',
                            content_type="application/json")
    assert response.status_code == 200, response.json


def test_a_control_character_deep_in_a_body_is_still_found(app, client, auth):
    auth.login_as("user")
    value = nested(30, '"a\\u0000"')
    response = client.patch("/api/me/preferences", data=f'{{"cli": {{"deep": {value}}}}}',
                            content_type="application/json")
    assert response.status_code == 422 and "control character" in response.json["message"]
