"""Control characters in text input are refused with 422 at validation, on every form and JSON body
(defect 11 of issue 10), and the error handler rolls the session back before it renders.

PostgreSQL refuses NUL in text (the insert fails, then the error page failed too, with
PendingRollbackError); SQLite stored it. Run with SKILLDESK_TEST_DATABASE_URL for PostgreSQL.
"""

from __future__ import annotations

import io
import re

import pytest
from flask import Flask, url_for
from sqlalchemy.exc import IntegrityError
from werkzeug.routing import PathConverter, UnicodeConverter

from app.extensions import db
from app.models import Message, Run, Trigger, User
from app.models.tables import new_hook_token
from app.runtime import execution
from tests.chat_driver import start_chat
from tests.conftest import PASSWORD, make_agent, make_user
from tests.test_routes import ADMIN, ANONYMOUS, ROUTES, World, call, methods_of, resolve

HX = {"HX-Request": "true"}
REFUSED = ["nul\x00byte", "bell\x07", "escape\x1b[31m", "del\x7f", "c1\x85"]


@pytest.mark.parametrize("text", REFUSED)
def test_a_message_with_a_control_character_is_refused_and_nothing_is_stored(app, client, auth, text):
    auth.login_as("user")
    conversation_id = start_chat(app, client)
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": text}, headers=HX)
    assert response.status_code == 422
    assert "“text” contains a control character" in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Message.id))) == 0


def test_tab_newline_and_carriage_return_are_text(app, client, auth):
    auth.login_as("user")
    conversation_id = start_chat(app, client)
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "a\tb\r\nc\n"}, headers=HX)
    assert response.status_code == 200
    with app.app_context():
        assert db.session.scalar(db.select(Message.content).where(Message.role == "user")) == "a\tb\r\nc"
        run_id = db.session.scalar(db.select(Run.id))
    execution.wait(run_id)  # let the run end before the test's database goes


def test_sign_in_and_search_refuse_them_too(app, client, auth):
    user_id = auth.create("user")
    with app.app_context():
        email = db.session.get(User, user_id).email
    assert client.post("/login", data={"email": email + "\x00", "password": PASSWORD}).status_code == 422
    auth.login(email)
    assert client.get("/chat/sidebar?q=a%00b").status_code == 422


def test_a_json_string_with_a_control_character_is_422_json(app, client):
    with app.app_context():
        user = make_user("user")
        trigger = Trigger(name="Hook", kind="webhook", token=new_hook_token(), agent_id=make_agent().id,
                          run_as_id=user.id, prompt="Handle {{ body }}")
        db.session.add(trigger)
        db.session.commit()
        token = trigger.token
    for body in ({"note": "a\x00b"}, {"deep": [{"x": "\x01"}]}, {"key\x00": 1}):
        response = client.post(f"/hooks/{token}", json=body)
        assert response.status_code == 422 and response.json["error"] == "invalid", body
        assert "control character" in response.json["message"]
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Run.id))) == 0
    accepted = client.post(f"/hooks/{token}", json={"note": "line\nbreak\ttab"})
    assert accepted.status_code == 202
    execution.wait(accepted.json["run"])  # let the run end before the test's database goes


def test_every_form_refuses_a_nul_byte(app):
    """Every POST route of the app, as an admin, with its form and a NUL in a field: 422, never 5xx."""
    world = World(app)
    problems = []
    for endpoint, access in ROUTES.items():
        if "POST" not in methods_of(app, endpoint) or endpoint == "auth.logout":
            continue
        poisoned = access.__class__(**{**access.__dict__, "data": {**access.data, "note": "x\x00y"}})
        token = world.objects[ADMIN]["tools_secret"] if access.token else None  # /v1/, /mcp/: tokens only
        response = call(app, world.clients[ADMIN], endpoint, "POST", poisoned, world.objects[ADMIN], token=token)
        if response.status_code != 422:
            problems.append(f"{endpoint}: {response.status_code}")
    assert not problems, "\n".join(["POST routes that took a NUL byte:", *problems])


def test_every_form_refuses_a_control_character_in_a_file_name(app):
    """A file's name is text from outside too: it became a document's title and source (PostgreSQL
    refuses NUL), and the multipart parser passes control characters through."""
    world = World(app)
    problems = []
    for endpoint, access in ROUTES.items():
        if "POST" not in methods_of(app, endpoint) or endpoint == "auth.logout":
            continue
        with app.test_request_context():
            url = url_for(endpoint, **resolve(access.args, world.objects[ADMIN]))
        for name in ("files", "file", "csv"):
            data = {**resolve(access.data, world.objects[ADMIN]), name: (io.BytesIO(b"# T\n\nx"), "a\x1bb.md")}
            token = {"Authorization": f"Bearer {world.objects[ADMIN]['tools_secret']}"} if access.token else {}
            response = world.clients[ADMIN].post(url, data=data, content_type="multipart/form-data", headers=token)
            if response.status_code != 422:
                problems.append(f"{endpoint} ({name}): {response.status_code}")
        if access.changes:
            world.renew()
    assert not problems, "\n".join(["POST routes that took a control character in a file name:", *problems])


def text_segments(app) -> list[tuple[object, list[str]]]:
    """Each rule with string or path parameters (`<name>`, `<path:model>`), and the names of those parameters."""
    found = []
    for rule in app.url_map.iter_rules():
        names = [name for name, converter in rule._converters.items()
                 if isinstance(converter, UnicodeConverter | PathConverter)]
        if names:
            found.append((rule, names))
    return found


def test_the_route_table_has_text_segments(app):
    assert len(text_segments(app)) > 30  # the walk below is not vacuous


@pytest.mark.parametrize("character", ["%00", "%1B", "%7F", "%C2%85"])
def test_a_control_character_in_a_path_segment_names_nothing_on_every_route(app, character):
    """Every rule of app.url_map with a string or path parameter, every method, signed in or not: 404.

    PostgreSQL refuses NUL in a text comparison, so `/hooks/a%00b` was a 500 before the view could
    say the token names no trigger; the route converters refuse the segment as they refuse an id past
    the range. A route added later is walked too.
    """
    world = World(app)
    problems = []
    for rule, names in text_segments(app):
        values = {name: str(value) for name, value in resolve(ROUTES[rule.endpoint].args, world.objects[ADMIN]).items()}
        for name in names:
            poisoned = {**values, name: f"a{character}b"}
            path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", lambda found: poisoned[found.group(1)], rule.rule)  # noqa: B023
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                for role in (ANONYMOUS, ADMIN):
                    response = world.clients[role].open(path, method=method)
                    response.close()
                    if response.status_code not in (404, 422):
                        problems.append(f"{role} {method} {path}: {response.status_code}")
    assert not problems, "\n".join(["path segments with a control character that named something:", *problems])


def test_the_error_page_renders_after_a_failed_flush(app: Flask, client, auth):
    """The error handler rolls back first: rendering (the signed-in user, the navigation) reads the
    database, which a failed transaction refuses on PostgreSQL (PendingRollbackError)."""

    def broken():
        db.session.add(User(email="dup@example.org", name="A", password_hash="x", role="user"))
        db.session.add(User(email="dup@example.org", name="B", password_hash="x", role="user"))
        db.session.flush()  # IntegrityError: the transaction is now failed

    app.add_url_rule("/test-broken", "test_broken", broken)
    auth.login_as("user")
    with app.app_context():
        db.session.expire_all()
    response = client.get("/test-broken")
    assert response.status_code == 500
    assert "Something went wrong" in response.text


def test_a_failed_transaction_is_rolled_back_before_the_error_is_answered(app: Flask, client, auth):
    seen = {}

    def broken():
        db.session.add(User(email="dup@example.org", name="A", password_hash="x", role="user"))
        db.session.add(User(email="dup@example.org", name="B", password_hash="x", role="user"))
        try:
            db.session.flush()
        except IntegrityError:
            seen["failed"] = True
            raise

    app.add_url_rule("/test-broken", "test_broken", broken)
    auth.login_as("admin")
    assert client.get("/test-broken").status_code == 500 and seen["failed"]
    assert client.get("/admin/users").status_code == 200
