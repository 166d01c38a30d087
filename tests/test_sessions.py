"""Revocable sessions (defect 9 of issue 10): signing out ends the session for every copy of its cookies.

Each sign-in is a row with a random token; the session cookie and the remember-me cookie carry the
token. Signing out, a new password, a new role, a deactivation and "Sign out everywhere" end it.
"""

from __future__ import annotations

import threading

from app import create_app
from app.extensions import db
from app.models import Conversation, Run, User, UserSession
from app.runtime import execution as runtime
from tests.chat_driver import read_in_thread, start_chat, until, working_until
from tests.conftest import PASSWORD
from tests.test_chat import demo_agent_id

NEW_PASSWORD = "a much longer new password"


def email_of(app, user_id: int) -> str:
    with app.app_context():
        return db.session.get(User, user_id).email


def signed_in(client) -> bool:
    response = client.get("/chat/")
    return response.status_code == 200


def sign_in(client, email: str, password: str = PASSWORD, remember: bool = False, **kwargs):
    data = {"email": email, "password": password, **({"remember": "y"} if remember else {})}
    response = client.post("/login", data=data, **kwargs)
    assert response.status_code == 302, response.text
    return response


def cookie(client, name: str) -> str | None:
    found = client.get_cookie(name)
    return found.value if found else None


def test_a_session_cookie_captured_before_sign_out_does_not_work_after_it(app, client, auth):
    email = email_of(app, auth.create("user"))
    sign_in(client, email)
    captured = cookie(client, "session")
    assert client.post("/logout").status_code == 302
    thief = app.test_client()
    thief.set_cookie("session", captured)
    assert not signed_in(thief)
    response = thief.post("/chat/", data={"agent_id": demo_agent_id(app)})
    assert response.status_code == 302 and response.location.startswith("/login")
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Conversation.id))) == 0


def test_the_remember_cookie_differs_across_sign_ins_and_dies_with_sign_out(app, client, auth):
    email = email_of(app, auth.create("user"))
    sign_in(client, email, remember=True)
    first = cookie(client, "remember_token")
    assert first
    client.post("/logout")
    assert cookie(client, "remember_token") is None  # cleared in this browser
    sign_in(client, email, remember=True)
    second = cookie(client, "remember_token")
    assert second and second != first
    for token in (first, second):
        if token == second:
            client.post("/logout")
        stolen = app.test_client()
        stolen.set_cookie("remember_token", token)
        assert not signed_in(stolen), "a remember-me cookie of an ended session still signs in"


def test_a_live_remember_cookie_signs_in_without_a_session(app, client, auth):
    email = email_of(app, auth.create("user"))
    sign_in(client, email, remember=True)
    browser = app.test_client()
    browser.set_cookie("remember_token", cookie(client, "remember_token"))
    assert signed_in(browser)


def test_the_cookies_carry_no_user_id(app, client, auth):
    user_id = auth.create("user")
    sign_in(client, email_of(app, user_id), remember=True)
    with app.app_context():
        [row] = db.session.scalars(db.select(UserSession).where(UserSession.user_id == user_id)).all()
    token = cookie(client, "remember_token").split("|")[0]
    assert token != str(user_id) and len(token) >= 40 and row.token_hash != token


def test_two_browsers_sign_out_one_at_a_time(app, auth):
    email = email_of(app, auth.create("user"))
    laptop, phone = app.test_client(), app.test_client()
    sign_in(laptop, email)
    sign_in(phone, email)
    laptop.post("/logout")
    assert not signed_in(laptop) and signed_in(phone)


def test_a_new_password_ends_the_other_sessions_and_keeps_this_one(app, client, auth):
    email = email_of(app, auth.create("user"))
    sign_in(client, email)
    other = app.test_client()
    sign_in(other, email, remember=True)
    old_remember = cookie(other, "remember_token")

    wrong = client.post("/account/password", data={"current": "not it", "password": NEW_PASSWORD,
                                                   "confirm": NEW_PASSWORD})
    assert wrong.status_code == 422 and "This is not your current password." in wrong.text
    assert 'class="field invalid"' in wrong.text
    assert signed_in(other)

    response = client.post("/account/password", data={"current": PASSWORD, "password": NEW_PASSWORD,
                                                      "confirm": NEW_PASSWORD})
    assert response.status_code == 302
    assert signed_in(client)
    assert not signed_in(other)
    stolen = app.test_client()
    stolen.set_cookie("remember_token", old_remember)
    assert not signed_in(stolen)
    assert app.test_client().post("/login", data={"email": email, "password": PASSWORD}).status_code == 422
    sign_in(app.test_client(), email, NEW_PASSWORD)


def test_sign_out_everywhere_ends_every_session_and_remember_cookie(app, client, auth):
    email = email_of(app, auth.create("user"))
    sign_in(client, email)
    others = [app.test_client(), app.test_client()]
    for other in others:
        sign_in(other, email, remember=True)
    remembered = cookie(others[0], "remember_token")
    page = client.get("/account/")
    assert page.status_code == 200 and "Sign out everywhere" in page.text
    response = client.post("/account/sessions/end")
    assert response.status_code == 302 and response.location.startswith("/login")
    assert not signed_in(client) and not any(signed_in(other) for other in others)
    stolen = app.test_client()
    stolen.set_cookie("remember_token", remembered)
    assert not signed_in(stolen)
    sign_in(client, email)  # signing in again works
    assert signed_in(client)


def test_deactivation_ends_the_remember_cookie_too(app, client, auth):
    user_id = auth.create("user")
    browser = app.test_client()
    sign_in(browser, email_of(app, user_id), remember=True)
    remembered = cookie(browser, "remember_token")
    auth.login_as("admin")
    client.post(f"/admin/users/{user_id}", data={"role": "user"})  # no "active": deactivated
    client.post(f"/admin/users/{user_id}", data={"role": "user", "active": "y"})  # and back
    stolen = app.test_client()
    stolen.set_cookie("remember_token", remembered)
    assert not signed_in(stolen) and not signed_in(browser)


def test_strong_protection_does_not_trust_a_client_supplied_forwarded_for(app, client, auth):
    email = email_of(app, auth.create("user"))
    victim = {"REMOTE_ADDR": "203.0.113.7", "HTTP_USER_AGENT": "Firefox"}
    sign_in(client, email, environ_base=victim)
    assert client.get("/chat/", environ_base=victim).status_code == 200
    thief = app.test_client()
    thief.set_cookie("session", cookie(client, "session"))
    # The thief sends the victim's address as X-Forwarded-For from elsewhere: not the same client.
    response = thief.get("/chat/", environ_base={"REMOTE_ADDR": "198.51.100.9", "HTTP_USER_AGENT": "Firefox"},
                         headers={"X-Forwarded-For": "203.0.113.7"})
    assert response.status_code == 302 and response.location.startswith("/login")


def test_behind_a_configured_proxy_the_forwarded_address_is_the_client(settings, app, auth):
    email = email_of(app, auth.create("user"))
    proxied = create_app(dict(settings, PROXY_FIX_HOPS=1))
    try:
        browser = proxied.test_client()
        proxy = {"REMOTE_ADDR": "127.0.0.1", "HTTP_USER_AGENT": "Firefox"}
        sign_in(browser, email, environ_base=proxy, headers={"X-Forwarded-For": "203.0.113.7"})
        same = browser.get("/chat/", environ_base=proxy, headers={"X-Forwarded-For": "203.0.113.7"})
        assert same.status_code == 200
        moved = browser.get("/chat/", environ_base=proxy, headers={"X-Forwarded-For": "198.51.100.9"})
        assert moved.status_code == 302 and moved.location.startswith("/login")
    finally:
        with proxied.app_context():
            db.session.remove()
            db.engine.dispose()


def test_an_open_stream_ends_when_its_session_is_signed_out(app, auth, scripted_model):
    """The run goes on; the SSE stream of a browser whose session ended closes within a poll."""
    release = threading.Event()
    slow = working_until(release)

    user_id = auth.create("user")
    email = email_of(app, user_id)
    browser, elsewhere = app.test_client(), app.test_client()
    sign_in(browser, email)
    sign_in(elsewhere, email)
    conversation_id = start_chat(app, browser, model_config_id=scripted_model(stream_function=slow))
    assert browser.post(f"/chat/{conversation_id}/messages", data={"text": "Go"}).status_code == 302
    with app.app_context():
        run_id = db.session.scalar(db.select(Run.id).where(Run.conversation_id == conversation_id))
    chunks: list[bytes] = []
    reader = read_in_thread(browser, f"/runs/{run_id}/events", chunks)
    until(lambda: any(b"event: text" in c for c in chunks), 5)
    assert any(b"event: text" in c for c in chunks), "the stream never started"
    try:
        assert elsewhere.post("/account/sessions/end").status_code == 302
        reader.join(timeout=5)
        assert not reader.is_alive(), "the stream of a signed-out session kept going"
        assert not any(b"event: end" in c for c in chunks)
    finally:
        release.set()
        runtime.wait(run_id)
