"""Accounts: the first-run page, sign in and out, hashed passwords, bad input and CSRF."""

from __future__ import annotations

import re

import pytest

from app.accounts.users import create_user
from app.config import DEFAULTS
from app.extensions import db
from app.models import Conversation, User
from tests.conftest import PASSWORD, make_agent, make_user

SETUP = {"name": "Ada Admin", "email": "ada@example.org", "password": PASSWORD, "confirm": PASSWORD}


def users() -> list[User]:
    return list(db.session.scalars(db.select(User)))


def csrf_token_of(page: str) -> str:
    """Read the form's CSRF token from a rendered page."""
    found = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page) or re.search(
        r'value="([^"]+)"[^>]*name="csrf_token"', page)
    assert found, "the page has no csrf_token field"
    return found.group(1)


# --- first run ------------------------------------------------------------------------------------

def test_fresh_install_sends_everyone_to_the_first_run_page(app, client):
    with app.app_context():
        assert users() == []
    response = client.get("/chat/")
    assert response.status_code == 302 and response.location.endswith("/setup")
    assert client.get("/login").location.endswith("/setup")
    page = client.get("/setup")
    assert page.status_code == 200
    assert "Create the first admin" in page.text


def test_first_run_page_creates_the_first_admin_and_signs_in(app, client):
    response = client.post("/setup", data=SETUP)
    assert response.status_code == 302
    with app.app_context():
        (admin,) = users()
        assert (admin.email, admin.role, admin.active) == ("ada@example.org", "admin", True)
    assert client.get("/admin/users").status_code == 200  # signed in as that admin
    # The demo agent and the offline model exist, so a new user can chat at once.
    assert "Demo assistant" in client.get("/chat/").text


def test_setup_is_gone_once_a_user_exists(app, client):
    client.post("/setup", data=SETUP)
    client.post("/logout")
    assert client.get("/setup").status_code == 404
    again = client.post("/setup", data={**SETUP, "email": "mallory@example.org"})
    assert again.status_code == 404
    with app.app_context():
        assert [u.email for u in users()] == ["ada@example.org"]


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"name": ""}, "name", "This field is required."),
    ({"email": ""}, "email", "This field is required."),
    ({"email": "not-an-email"}, "email", "Invalid email address."),
    ({"password": "", "confirm": ""}, "password", "This field is required."),
    ({"password": "short", "confirm": "short"}, "password", "Use between 10 and 200 characters."),
    ({"confirm": "something else entirely"}, "confirm", "The passwords differ."),
    ({"name": "x" * 101}, "name", "Field cannot be longer than 100 characters."),
    ({"email": "a" * 250 + "@example.org"}, "email", "Field cannot be longer than 254 characters."),
    ({"password": "p" * 201, "confirm": "p" * 201}, "password", "Use between 10 and 200 characters."),
])
def test_setup_rejects_bad_input_beside_the_field_and_stores_nothing(app, client, change, field, message):
    response = client.post("/setup", data={**SETUP, **change})
    assert response.status_code == 422
    error = re.search(rf'id="{field}-error"[^>]*>([^<]*)<', response.text)
    assert error and message in error.group(1)
    assert f'id="{field}"' in response.text and 'aria-invalid="true"' in response.text
    with app.app_context():
        assert users() == []


def test_there_are_no_default_credentials(app, client):
    assert not any("PASSWORD" in key and value for key, value in DEFAULTS.items())
    guesses = [("admin", "admin"), ("admin@example.org", "admin"), ("admin@localhost", "password")]
    for email, password in guesses:
        response = client.post("/login", data={"email": email, "password": password})
        assert response.status_code in (302, 422)
        assert response.status_code != 302 or response.location.endswith("/setup")
    with app.app_context():
        assert users() == []


# --- sign in and out ------------------------------------------------------------------------------

def test_sign_in_and_out(app, client, auth):
    auth.create("user", email="bo@example.org")
    assert client.get("/chat/").location.startswith("/login")
    response = auth.login("bo@example.org")
    assert response.status_code == 302 and response.location == "/"
    page = client.get("/chat/")
    assert page.status_code == 200 and "Sign out" in page.text
    assert client.get("/logout").status_code == 405  # signing out changes state: POST only
    assert auth.logout().location == "/login"
    assert client.get("/chat/").location.startswith("/login")


def test_sign_in_ignores_case_and_spaces_in_the_email(app, client, auth):
    auth.create("user", email="cy@example.org")
    assert auth.login(" CY@Example.org ").status_code == 302


def test_sign_in_follows_next_only_within_the_site(app, client, auth):
    auth.create("user", email="di@example.org")
    response = client.post("/login?next=/shares", data={"email": "di@example.org", "password": PASSWORD})
    assert response.location == "/shares"
    client.post("/logout")
    for target in ("//evil.example/x", "https://evil.example/", "javascript:alert(1)"):
        response = client.post(f"/login?next={target}",
                               data={"email": "di@example.org", "password": PASSWORD})
        assert response.location == "/", target
        client.post("/logout")


def test_anonymous_page_request_keeps_where_it_was_going(app, client, auth):
    auth.create("user")
    response = client.get("/shares?x=1")
    assert response.status_code == 302
    assert response.location.startswith("/login?next=")


@pytest.mark.parametrize("email", ["eve@example.org", "nobody@example.org"])
def test_wrong_password_or_unknown_email_is_a_422_with_one_message(app, client, auth, email):
    auth.create("user", email="eve@example.org")
    response = client.post("/login", data={"email": email, "password": "wrong password!"})
    assert response.status_code == 422
    assert "Wrong e-mail or password." in response.text
    assert client.get("/chat/").status_code == 302  # still signed out


def test_empty_sign_in_fields_are_a_422(app, client, auth):
    auth.create("user")
    response = client.post("/login", data={"email": "", "password": ""})
    assert response.status_code == 422
    assert response.text.count("This field is required.") == 2


def test_deactivated_account_cannot_sign_in(app, client, auth):
    user_id = auth.create("user", email="fay@example.org")
    with app.app_context():
        db.session.get(User, user_id).active = False
        db.session.commit()
    response = auth.login("fay@example.org")
    assert response.status_code == 422 and "Wrong e-mail or password." in response.text


def test_passwords_are_stored_hashed_and_salted(app):
    with app.app_context():
        one = create_user("one@example.org", "One", PASSWORD)
        two = create_user("two@example.org", "Two", PASSWORD)
        db.session.commit()
        for user in (one, two):
            assert PASSWORD not in user.password_hash
            assert user.password_hash.startswith("scrypt:")
            assert user.check_password(PASSWORD) and not user.check_password(PASSWORD + "x")
        assert one.password_hash != two.password_hash  # salted


def test_json_clients_get_401_not_a_redirect(app, client, auth):
    auth.create("user")
    response = client.get("/chat/", headers={"Accept": "application/json"})
    assert response.status_code == 401
    assert response.json == {"error": "unauthorized", "message": "Sign in first."}


def test_health_check_is_public(client):
    assert client.get("/healthz").json == {"status": "ok"}


# --- CSRF -----------------------------------------------------------------------------------------

def test_setup_without_or_with_a_wrong_csrf_token_is_refused(csrf_app):
    client = csrf_app.test_client()
    page = client.get("/setup")
    token = csrf_token_of(page.text)
    for data in (SETUP, {**SETUP, "csrf_token": "forged"}, {**SETUP, "csrf_token": token + "x"}):
        response = client.post("/setup", data=data)
        assert response.status_code == 400
        assert "The form expired or was not sent from Skilldesk" in response.text
        assert "Reload the page and try again." in response.text
    with csrf_app.app_context():
        assert users() == []
    assert client.post("/setup", data={**SETUP, "csrf_token": token}).status_code == 302


def test_a_token_from_another_session_is_refused(csrf_app, app):
    with app.app_context():
        make_user(email="gil@example.org")
    first, second = csrf_app.test_client(), csrf_app.test_client()
    token = csrf_token_of(first.get("/login").text)
    second.get("/login")
    response = second.post("/login",
                           data={"email": "gil@example.org", "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 400
    assert second.get("/chat/").status_code == 302  # not signed in


def sign_in_with_csrf(client, email: str) -> str:
    token = csrf_token_of(client.get("/login").text)
    response = client.post("/login", data={"email": email, "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 302
    return csrf_token_of(client.get("/chat/").text)


def test_admin_forms_need_the_csrf_token(csrf_app, app):
    with app.app_context():
        make_user("admin", email="hal@example.org")
    client = csrf_app.test_client()
    token = sign_in_with_csrf(client, "hal@example.org")
    new_user = {"name": "Ivy", "email": "ivy@example.org", "password": PASSWORD, "role": "user"}
    response = client.post("/admin/users", data=new_user)
    assert response.status_code == 400
    with app.app_context():
        assert db.session.scalar(db.select(User).where(User.email == "ivy@example.org")) is None
    assert client.post("/admin/users", data={**new_user, "csrf_token": token}).status_code == 302


def test_htmx_requests_send_the_token_as_a_header(csrf_app, app):
    with app.app_context():
        user = make_user(email="jo@example.org")
        agent = make_agent()
        conversation = Conversation(user_id=user.id, agent_id=agent.id, title="Old")
        db.session.add(conversation)
        db.session.commit()
        conversation_id = conversation.id
    client = csrf_app.test_client()
    sign_in_with_csrf(client, "jo@example.org")
    page = client.get(f"/chat/{conversation_id}").text
    # The base layout sends the page's token with htmx (signed with the time: read it from this page).
    header = re.search(r"""hx-headers='\{"X-CSRFToken": "([^"]+)"\}'""", page)
    assert header is not None
    token = header.group(1)
    url = f"/chat/{conversation_id}/rename"
    refused = client.post(url, data={"title": "Forged"}, headers={"HX-Request": "true"})
    assert refused.status_code == 400
    assert 'class="alert error"' in refused.text and refused.headers["HX-Retarget"] == "#alerts"
    wrong = client.post(url, data={"title": "Forged"}, headers={"HX-Request": "true", "X-CSRFToken": "nope"})
    assert wrong.status_code == 400
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).title == "Old"
    accepted = client.post(url, data={"title": "New title"},
                           headers={"HX-Request": "true", "X-CSRFToken": token})
    assert accepted.status_code == 200 and "New title" in accepted.text


def test_every_post_form_on_the_pages_carries_the_token(csrf_app, app):
    with app.app_context():
        admin = make_user("admin", email="kim@example.org")
        conversation = Conversation(user_id=admin.id, agent_id=make_agent().id, title="Mine")
        db.session.add(conversation)
        db.session.commit()
        pages = ["/chat/", f"/chat/{conversation.id}", "/admin/users", "/admin/agents/new",
                 "/admin/models/new", "/shares", f"/chat/{conversation.id}/share"]
    client = csrf_app.test_client()
    sign_in_with_csrf(client, "kim@example.org")
    for path in pages:
        page = client.get(path, headers={"HX-Request": "true"} if path.endswith("/share") else {})
        assert page.status_code == 200, path
        for form in re.findall(r"<form\b[^>]*>.*?</form>", page.text, re.S):
            if re.search(r'method="post"', form, re.I):
                assert 'name="csrf_token"' in form, (path, form[:200])


# --- one error handler ----------------------------------------------------------------------------

@pytest.fixture
def failing_routes(app):
    """Routes that fail on purpose, added before the app serves its first request."""
    from flask import abort

    def boom():
        raise RuntimeError("the database caught fire")

    def refuse():
        abort(403, "You can no longer use this agent.")

    app.add_url_rule("/test-boom", view_func=boom)
    app.add_url_rule("/test-refuse", view_func=refuse)


def test_errors_answer_a_page_a_fragment_or_json(app, client, auth, failing_routes, caplog):
    auth.login_as("user")
    page = client.get("/chat/999999")
    assert page.status_code == 404 and "<h1>Not found</h1>" in page.text and "<!doctype html>" in page.text
    fragment = client.get("/chat/999999", headers={"HX-Request": "true"})
    assert fragment.status_code == 404 and fragment.text.lstrip().startswith('<div class="alert error"')
    assert (fragment.headers["HX-Retarget"], fragment.headers["HX-Reswap"]) == ("#alerts", "beforeend")
    as_json = client.get("/chat/999999", headers={"Accept": "application/json"})
    assert as_json.status_code == 404 and as_json.json["error"] == "not_found"
    refused = client.get("/test-refuse")
    assert refused.status_code == 403 and "You can no longer use this agent." in refused.text
    crashed = client.get("/test-boom")
    assert crashed.status_code == 500 and "Something went wrong" in crashed.text
    assert "caught fire" not in crashed.text  # the details go to the log, not to the visitor
    assert any("unhandled error on GET /test-boom" in r.getMessage() and r.exc_info for r in caplog.records)


def test_htmx_is_configured_to_swap_422_and_to_send_the_csrf_header(app, client, auth):
    import json as jsonlib

    auth.login_as("user")
    page = client.get("/chat/").text
    config = jsonlib.loads(re.search(r'<meta name="htmx-config" content=\'([^\']+)\'', page).group(1))
    assert {"code": "422", "swap": True} in config["responseHandling"]
    assert config["allowEval"] is False
    assert re.search(r'<body hx-headers=\'\{"X-CSRFToken": "[^"]+"\}\'', page)
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert scripts == ["/static/vendor/htmx.min.js", "/static/vendor/sse.min.js", "/static/js/app.js"]
    for path in scripts:
        response = client.get(path)
        assert response.status_code == 200 and len(response.data) > 500
        response.close()


def test_the_secret_key_is_made_once_and_kept_private(tmp_path):
    from app.config import _persistent_secret

    first = _persistent_secret(tmp_path / "secret_key")
    assert len(first) >= 40 and _persistent_secret(tmp_path / "secret_key") == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
