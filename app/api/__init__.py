"""The JSON API's plumbing: one error shape, strict JSON bodies, sign-in by personal API token.

The views are in app/blueprints/api.py. A request signs in with the web app's session (and then
sends the CSRF token with every write, as htmx does) or with a personal token (tokens.py; no
cookie, so no CSRF token either).
"""

from __future__ import annotations

from flask import Blueprint, Flask, current_app, request

from app.api.errors import ApiError, api_error_response
from app.api.tokens import SAFE_METHODS, request_token, user_for_bearer
from app.extensions import csrf, login_manager
from app.web.security import is_api_request


def init_blueprint(bp: Blueprint) -> None:
    """Give an API blueprint JSON errors, CSRF for sessions and scopes for tokens (once, where it is made)."""
    bp.register_error_handler(ApiError, api_error_response)
    bp.before_request(_csrf_or_scope)


def init_app(app: Flask, bp: Blueprint) -> None:
    """Let tokens sign in to the API, and leave the API blueprint's CSRF check to `_csrf_or_scope`."""
    csrf.exempt(bp)
    login_manager.request_loader(_user_from_token)


def _user_from_token(req):
    # Flask-Login asks only when the session has no user; tokens open /api/ and nothing else.
    if not is_api_request():
        return None
    return user_for_bearer(req.headers.get("Authorization"))


def _csrf_or_scope() -> None:
    token = request_token()
    if token is None:
        if current_app.config["WTF_CSRF_ENABLED"]:
            csrf.protect()
        return
    if token.scope == "read" and request.method not in SAFE_METHODS:
        raise ApiError(403, "This token may only read; create a token with the chat scope to send or change.",
                       "INSUFFICIENT_SCOPE")
