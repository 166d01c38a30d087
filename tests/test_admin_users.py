"""User administration: create, change roles, deactivate, delete; changes apply on the next request."""

from __future__ import annotations

import threading

import pytest

from app.extensions import db
from app.models import Run, User
from app.runtime import execution
from tests.chat_driver import start_chat, until, working_until
from tests.conftest import PASSWORD

NEW_USER = {"name": "Lea", "email": "lea@example.org", "password": PASSWORD, "role": "user"}


def user_by_email(email: str) -> User | None:
    return db.session.scalar(db.select(User).where(User.email == email))


@pytest.fixture
def admin(auth) -> int:
    """Sign the test client in as an admin; return the admin's id."""
    return auth.login_as("admin")


@pytest.fixture
def other(app, auth):
    """A second browser: a user signed in with their own client. Returns (client, user id)."""
    user_id = auth.create("user", email="other@example.org")
    client = app.test_client()
    assert client.post("/login", data={"email": "other@example.org", "password": PASSWORD}).status_code == 302
    return client, user_id


# --- creating users -------------------------------------------------------------------------------

def test_admin_creates_a_user_who_can_sign_in(app, client, admin):
    page = client.get("/admin/users")
    assert page.status_code == 200 and "Create a user" in page.text
    response = client.post("/admin/users", data={**NEW_USER, "role": "guest"})
    assert response.status_code == 302
    with app.app_context():
        user = user_by_email("lea@example.org")
        assert (user.name, user.role, user.active) == ("Lea", "guest", True)
        assert user.password_hash != PASSWORD and user.check_password(PASSWORD)
    assert "Created lea@example.org (guest)." in client.get("/admin/users").text
    fresh = app.test_client()
    assert fresh.post("/login", data={"email": "lea@example.org", "password": PASSWORD}).status_code == 302


@pytest.mark.parametrize(("change", "message"), [
    ({"name": ""}, "This field is required."),
    ({"email": ""}, "This field is required."),
    ({"password": ""}, "This field is required."),
    ({"name": "n" * 101}, "Field cannot be longer than 100 characters."),
    ({"email": "e" * 250 + "@example.org"}, "Field cannot be longer than 254 characters."),
    ({"email": "no-at-sign"}, "Invalid email address."),
    ({"password": "short"}, "Use between 10 and 200 characters."),
    ({"password": "p" * 201}, "Use between 10 and 200 characters."),
    ({"role": "root"}, "Not a valid choice."),
])
def test_bad_new_user_is_a_422_with_the_error_beside_the_field(app, client, admin, change, message):
    response = client.post("/admin/users", data={**NEW_USER, **change})
    assert response.status_code == 422
    assert 'class="field invalid"' in response.text and message in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(User.id))) == 1  # only the admin


@pytest.mark.parametrize("email", ["lea@example.org", "LEA@Example.org", " lea@example.org "])
def test_duplicate_email_is_refused(app, client, admin, email):
    assert client.post("/admin/users", data=NEW_USER).status_code == 302
    response = client.post("/admin/users", data={**NEW_USER, "email": email, "name": "Other Lea"})
    assert response.status_code == 422
    assert "An account with this e-mail already exists." in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(User.id))) == 2


@pytest.mark.parametrize("role", ["user", "guest"])
def test_only_admins_reach_user_administration(app, client, auth, role):
    target = auth.create("user")
    auth.login_as(role)
    assert client.get("/admin/users").status_code == 403
    assert client.post("/admin/users", data=NEW_USER).status_code == 403
    assert client.post(f"/admin/users/{target}", data={"role": "admin", "active": "y"}).status_code == 403
    assert client.post(f"/admin/users/{target}/delete").status_code == 403
    with app.app_context():
        assert user_by_email("lea@example.org") is None
        assert db.session.get(User, target).role == "user"


# --- roles and deactivation take effect on the next request -----------------------------------------

def test_a_changed_role_ends_the_users_sessions_and_applies_when_they_sign_in_again(app, client, admin, other):
    other_client, other_id = other
    assert other_client.get("/admin/users").status_code == 403
    response = client.post(f"/admin/users/{other_id}", data={"role": "admin", "active": "y"})
    assert response.status_code == 302
    signed_out = other_client.get("/admin/users")
    assert signed_out.status_code == 302 and signed_out.location.startswith("/login")
    other_client.post("/login", data={"email": "other@example.org", "password": PASSWORD})
    assert other_client.get("/admin/users").status_code == 200
    client.post(f"/admin/users/{other_id}", data={"role": "guest", "active": "y"})
    assert other_client.get("/admin/users").status_code == 302  # signed out again
    other_client.post("/login", data={"email": "other@example.org", "password": PASSWORD})
    assert other_client.get("/admin/users").status_code == 403
    assert other_client.post("/chat/", data={"agent_id": 1}).status_code in (403, 404)
    # Saving the row unchanged ends nothing.
    client.post(f"/admin/users/{other_id}", data={"role": "guest", "active": "y"})
    assert other_client.get("/chat/").status_code == 200


def test_role_change_over_htmx_returns_the_row(app, client, admin, other):
    _other_client, other_id = other
    response = client.post(f"/admin/users/{other_id}", data={"role": "guest", "active": "y"},
                           headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response.text.lstrip().startswith(f'<tr id="user-{other_id}">')
    assert '<option value="guest" selected>' in response.text


def test_a_deactivated_account_is_signed_out_on_its_next_request(app, client, admin, other):
    other_client, other_id = other
    assert other_client.get("/chat/").status_code == 200
    assert client.post(f"/admin/users/{other_id}", data={"role": "user"}).status_code == 302  # no "active"
    response = other_client.get("/chat/")
    assert response.status_code == 302 and response.location.startswith("/login")
    credentials = {"email": "other@example.org", "password": PASSWORD}
    assert other_client.post("/login", data=credentials).status_code == 422
    client.post(f"/admin/users/{other_id}", data={"role": "user", "active": "y"})
    assert other_client.post("/login", data=credentials).status_code == 302


def test_a_deleted_account_is_signed_out_on_its_next_request(app, client, admin, other):
    other_client, other_id = other
    assert client.post(f"/admin/users/{other_id}/delete").status_code == 302
    with app.app_context():
        assert db.session.get(User, other_id) is None
    assert other_client.get("/chat/").location.startswith("/login")


def test_the_stream_of_a_deactivated_user_ends(app, client, admin, other, scripted_model):
    """A run keeps going, but the deactivated user's open SSE stream closes within a poll."""
    release = threading.Event()
    slow = working_until(release)

    other_client, other_id = other
    conversation_id = start_chat(app, other_client, model_config_id=scripted_model(stream_function=slow))
    assert other_client.post(f"/chat/{conversation_id}/messages", data={"text": "Go"}).status_code == 302
    with app.app_context():
        run_id = db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id))
    chunks: list[bytes] = []

    def read() -> None:  # a streamed response must be read in the thread that opened it
        stream = other_client.get(f"/runs/{run_id}/events")
        assert stream.status_code == 200 and stream.mimetype == "text/event-stream"
        try:
            chunks.extend(stream.response)
        finally:
            stream.close()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    until(lambda: any(b"event: text" in c for c in chunks), 5)
    assert any(b"event: text" in c for c in chunks), "the stream never started"
    try:
        client.post(f"/admin/users/{other_id}", data={"role": "user"})  # deactivate
        reader.join(timeout=5)
        assert not reader.is_alive(), "the stream of a deactivated user kept going"
        with app.app_context():
            assert db.session.get(Run, run_id).status == "running"  # the stream ended, not the run
        assert not any(b"event: end" in c for c in chunks)
    finally:
        release.set()
        execution.wait(run_id)


# --- the last admin -------------------------------------------------------------------------------

def test_the_last_admin_cannot_be_demoted_or_deactivated(app, client, admin):
    for data in ({"role": "user", "active": "y"}, {"role": "admin"}):
        response = client.post(f"/admin/users/{admin}", data=data)
        assert response.status_code == 422
        assert "This is the last active admin." in response.text
        htmx = client.post(f"/admin/users/{admin}", data=data, headers={"HX-Request": "true"})
        assert htmx.status_code == 422 and "This is the last active admin." in htmx.text
    with app.app_context():
        user = db.session.get(User, admin)
        assert (user.role, user.active) == ("admin", True)


def test_an_admin_can_be_demoted_when_another_remains(app, client, admin, auth):
    second = auth.create("admin")
    assert client.post(f"/admin/users/{second}", data={"role": "user", "active": "y"}).status_code == 302
    with app.app_context():
        assert db.session.get(User, second).role == "user"


def test_an_admin_cannot_delete_their_own_account(app, client, admin):
    response = client.post(f"/admin/users/{admin}/delete", follow_redirects=True)
    assert "You cannot delete your own account here." in response.text
    with app.app_context():
        assert db.session.get(User, admin) is not None


def test_deleting_a_user_that_does_not_exist_is_404(client, admin):
    assert client.post("/admin/users/999999/delete").status_code == 404
    assert client.post("/admin/users/999999", data={"role": "user"}).status_code == 404


# --- the CLI --------------------------------------------------------------------------------------

def test_cli_creates_a_user_who_can_sign_in(app, runner, auth):
    result = runner.invoke(args=["create-user", "--email", "Max@Example.org", "--name", "Max",
                                 "--role", "admin", "--password", PASSWORD])
    assert result.exit_code == 0, result.output
    assert "Created max@example.org (admin)." in result.output
    with app.app_context():
        user = user_by_email("max@example.org")
        assert user.role == "admin" and user.check_password(PASSWORD)
    assert auth.login("max@example.org").status_code == 302


def test_cli_prompts_for_the_password_when_not_given(app, runner):
    result = runner.invoke(args=["create-user", "--email", "nia@example.org", "--name", "Nia"],
                           input=f"{PASSWORD}\n{PASSWORD}\n")
    assert result.exit_code == 0, result.output
    with app.app_context():
        assert user_by_email("nia@example.org").role == "user"


@pytest.mark.parametrize(("args", "message"), [
    (["--password", "short"], "use at least 10 characters"),
    (["--role", "root", "--password", PASSWORD], "'root' is not one of"),
])
def test_cli_refuses_bad_input(app, runner, args, message):
    result = runner.invoke(args=["create-user", "--email", "oz@example.org", "--name", "Oz", *args])
    assert result.exit_code == 2 and message in result.output
    with app.app_context():
        assert user_by_email("oz@example.org") is None


def test_cli_refuses_a_duplicate_email(app, runner, auth):
    auth.create("user", email="pat@example.org")
    result = runner.invoke(args=["create-user", "--email", "PAT@example.org", "--name", "Pat",
                                 "--password", PASSWORD])
    assert result.exit_code == 2 and "an account with this e-mail already exists" in result.output
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(User.id))) == 1
