"""The JSON API's plumbing: one error shape, strict JSON bodies, sign-in by personal API token.

The views are in app/blueprints/api.py. A request signs in with the web app's session (and then
sends the CSRF token with every write, as htmx does) or with a personal token (tokens.py; no
cookie, so no CSRF token either). The other tools' areas (the OpenAI-compatible API, MCP) open to
tokens only, each with its scope and its own error shape (`init_token_area`).
"""

from __future__ import annotations

from collections.abc import Callable

from flask import Blueprint, Flask, Response, current_app, g, request

from app.api.errors import ApiError, api_error_response
from app.api.tokens import SAFE_METHODS, note_use, request_token, token_for_bearer, user_for_bearer
from app.extensions import csrf, login_manager
from app.web.security import is_api_request

# A refusal in an area's own shape: (status, message, code) -> the answer.
Refusal = Callable[[int, str, str], Response]


def init_blueprint(bp: Blueprint) -> None:
    """Give an API blueprint JSON errors, CSRF for sessions and scopes for tokens (once, where it is made)."""
    bp.register_error_handler(ApiError, api_error_response)
    bp.before_request(_csrf_or_scope)


def init_app(app: Flask, bp: Blueprint) -> None:
    """Let tokens sign in to the API, and leave the API blueprint's CSRF check to `_csrf_or_scope`."""
    csrf.exempt(bp)
    _first(app, _sign_in_by_token)


def init_token_area(app: Flask, bp: Blueprint, scope: str, refuse: Refusal,
                    guard: Callable[[], Response | None] | None = None) -> None:
    """Open a blueprint to personal tokens with `scope` only: no session, no CSRF, refusals in its own shape.

    A request without a valid token is refused 401, a token without the scope 403, before the sign-in
    check (which would answer in the web app's shapes); a session cookie never signs in here. `guard`,
    when given, answers first (MCP's Origin check).
    """
    csrf.exempt(bp)
    app.extensions.setdefault("token_areas", {})[bp.name] = (scope, refuse, guard)
    _first(app, _sign_in_to_token_area)


def _first(app: Flask, check: Callable[[], Response | None]) -> None:
    first = app.before_request_funcs.setdefault(None, [])
    if check not in first:
        first.insert(0, check)  # before the sign-in check, which reads current_user


def _sign_in_by_token() -> None:
    # A Bearer header is the request's credential, whatever cookies come with it. Left to Flask-Login's
    # request_loader, a token was never asked: strong session protection first threw away any session
    # cookie without a user (one holding only a CSRF token, or left by a sign-out) and stopped there.
    # Tokens open /api/ and the token areas, nothing else.
    header = request.headers.get("Authorization")
    if is_api_request() and header and header.startswith("Bearer "):
        user = user_for_bearer(header)
        login_manager._update_request_context_with_user(user)
        if user is not None:
            note_use(request_token())


def _sign_in_to_token_area() -> Response | None:
    area = current_app.extensions.get("token_areas", {}).get(request.blueprint or "")
    if area is None:
        return None
    scope, refuse, guard = area
    if guard is not None and (refused := guard()) is not None:
        return refused
    token = token_for_bearer(request.headers.get("Authorization"))
    if token is None:
        return refuse(401, "Send a valid personal API token as `Authorization: Bearer <token>`; create one "
                           "on Skilldesk's API tokens page (/account/tokens/).", "invalid_api_key")
    g.api_token = token
    login_manager._update_request_context_with_user(token.user)
    if not token.allows(scope):
        return refuse(403, f"This token does not have the {scope} scope; create a token with it.",
                      "insufficient_scope")
    note_use(token)
    return None


def _csrf_or_scope() -> None:
    token = request_token()
    if token is None:
        if current_app.config["WTF_CSRF_ENABLED"]:
            csrf.protect()
        return
    if not token.allows("read"):
        raise ApiError(403, "This token has no scope for /api/; create a token with the read or chat scope.",
                       "INSUFFICIENT_SCOPE")
    if not token.allows("chat") and request.method not in SAFE_METHODS:
        raise ApiError(403, "This token may only read; create a token with the chat scope to send or change.",
                       "INSUFFICIENT_SCOPE")
