"""Cookies: Secure whenever the browser reached Skilldesk over HTTPS, or always when SESSION_COOKIE_SECURE says so.

Flask and Flask-Login read `*_COOKIE_SECURE` once, from the configuration; whether a request came over
HTTPS is known per request (directly, or through the PROXY_FIX_HOPS proxies and their X-Forwarded-Proto).
Over plain http (`make run` on 127.0.0.1) cookies stay plain, or no browser would send them back.
SameSite comes from the configuration (`SESSION_COOKIE_SAMESITE`, `REMEMBER_COOKIE_SAMESITE`: Lax).
"""

from __future__ import annotations

from flask import Flask, current_app, has_request_context, request
from flask import Response as FlaskResponse
from flask.sessions import SecureCookieSessionInterface


def marked_secure() -> bool:
    """Tell whether the cookies of this response are marked Secure."""
    return bool(current_app.config["SESSION_COOKIE_SECURE"]) or (has_request_context() and request.is_secure)


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session, its cookie Secure per request."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return marked_secure()


class Response(FlaskResponse):
    """Flask's response; a cookie set on it (Flask-Login's remember cookie) is Secure per request."""

    def set_cookie(self, key: str, *args, secure: bool = False, **kwargs) -> None:
        super().set_cookie(key, *args, secure=secure or marked_secure(), **kwargs)


def init_app(app: Flask) -> None:
    app.session_interface = SessionInterface()
    app.response_class = Response
