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
    first = app.before_request_funcs.setdefault(None, [])
    if _sign_in_by_token not in first:
        first.insert(0, _sign_in_by_token)  # before the sign-in check, which reads current_user


def _sign_in_by_token() -> None:
    # A Bearer header is the request's credential, whatever cookies come with it. Left to Flask-Login's
    # request_loader, a token was never asked: strong session protection first threw away any session
    # cookie without a user (one holding only a CSRF token, or left by a sign-out) and stopped there.
    # Tokens open /api/ and nothing else.
    header = request.headers.get("Authorization")
    if is_api_request() and header and header.startswith("Bearer "):
        login_manager._update_request_context_with_user(user_for_bearer(header))


def _csrf_or_scope() -> None:
    token = request_token()
    if token is None:
        if current_app.config["WTF_CSRF_ENABLED"]:
            csrf.protect()
        return
    if token.scope == "read" and request.method not in SAFE_METHODS:
        raise ApiError(403, "This token may only read; create a token with the chat scope to send or change.",
                       "INSUFFICIENT_SCOPE")
