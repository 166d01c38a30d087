"""Cookies (defect 4 of issue 25): both sign-in cookies are SameSite=Lax, and Secure over HTTPS.

A sign-in with "Keep me signed in" sets the session cookie and Flask-Login's remember cookie. Both are
Secure when SESSION_COOKIE_SECURE is on, or when the request reached Skilldesk over HTTPS (through the
proxies PROXY_FIX_HOPS trusts, which say so with X-Forwarded-Proto); over plain http (`make run`) they
are not, or no browser would send them back and nobody could sign in.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app import create_app
from app.extensions import db
from tests.conftest import PASSWORD, make_user

SIGN_IN_COOKIES = ("session", "remember_token")


def set_cookies(response) -> dict[str, set[str]]:
    """Each cookie the response sets, with its attributes as lower-case words (`samesite=lax`, `secure`)."""
    found = {}
    for header in response.headers.getlist("Set-Cookie"):
        name_value, *attributes = (part.strip() for part in header.split(";"))
        found[name_value.split("=", 1)[0]] = {attribute.lower().replace(" ", "") for attribute in attributes}
    return found


def sign_in_remembered(app, **kwargs) -> dict[str, set[str]]:
    """Sign in with "Keep me signed in"; the cookies the answer sets."""
    with app.app_context():
        email = make_user("user").email
    response = app.test_client().post("/login", data={"email": email, "password": PASSWORD, "remember": "y"},
                                      **kwargs)
    assert response.status_code == 302, response.text
    cookies = set_cookies(response)
    assert set(SIGN_IN_COOKIES) <= set(cookies), cookies
    return cookies


@pytest.fixture
def configured(settings, app) -> Iterator:
    """Make a test app with these settings, on the test database (emptied after the test by `app`)."""
    made = []

    def make(**overrides):
        built = create_app({**settings, **overrides})
        made.append(built)
        return built

    yield make
    for built in made:
        with built.app_context():
            db.session.remove()
            db.engine.dispose()


def test_over_plain_http_both_cookies_are_samesite_lax_and_not_secure(configured):
    app = configured()
    cookies = sign_in_remembered(app)
    for name in SIGN_IN_COOKIES:
        assert "samesite=lax" in cookies[name], f"{name}: {cookies[name]}"
        assert "httponly" in cookies[name], f"{name}: {cookies[name]}"
        assert "secure" not in cookies[name], f"{name} is Secure over http: no browser would send it back"


def test_the_setting_marks_both_cookies_secure(configured):
    app = configured(SESSION_COOKIE_SECURE=True)
    cookies = sign_in_remembered(app)
    for name in SIGN_IN_COOKIES:
        assert {"secure", "samesite=lax"} <= cookies[name], f"{name}: {cookies[name]}"


def test_https_through_the_configured_proxy_marks_both_cookies_secure(configured):
    app = configured(PROXY_FIX_HOPS=1)
    cookies = sign_in_remembered(app, headers={"X-Forwarded-Proto": "https"})
    for name in SIGN_IN_COOKIES:
        assert {"secure", "samesite=lax"} <= cookies[name], f"{name}: {cookies[name]}"


def test_https_served_directly_marks_both_cookies_secure(configured):
    app = configured()
    cookies = sign_in_remembered(app, base_url="https://localhost")
    for name in SIGN_IN_COOKIES:
        assert "secure" in cookies[name], f"{name}: {cookies[name]}"


def test_a_forwarded_scheme_without_a_trusted_proxy_changes_nothing(configured):
    app = configured()
    cookies = sign_in_remembered(app, headers={"X-Forwarded-Proto": "https"})
    for name in SIGN_IN_COOKIES:
        assert "secure" not in cookies[name], f"{name}: {cookies[name]}"


def test_the_setting_is_read_from_the_environment(monkeypatch, configured):
    monkeypatch.setenv("SKILLDESK_SESSION_COOKIE_SECURE", "true")
    app = configured()
    assert app.config["SESSION_COOKIE_SECURE"] is True
    cookies = sign_in_remembered(app)
    assert all("secure" in cookies[name] for name in SIGN_IN_COOKIES), cookies

