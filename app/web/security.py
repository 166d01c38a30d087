"""Who may ask: sign-in by default, public endpoints by exception, roles by decorator; security headers."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flask import Flask, abort, current_app, g, jsonify, redirect, request, url_for
from flask_login import current_user
from werkzeug.middleware.proxy_fix import ProxyFix

from app.extensions import db, login_manager
from app.models import User

PUBLIC_ATTR = "_skilldesk_public"

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
)


def public(view: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a view as reachable without signing in."""
    setattr(view, PUBLIC_ATTR, True)
    return view


def roles_required(*roles: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Allow the view only to signed-in users whose role is one of `roles` (403 otherwise)."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if current_user.role not in roles:
                abort(403)
            return view(*args, **kwargs)

        guarded._skilldesk_roles = roles  # read by the route/role test and the docs
        return guarded

    return decorate


admin_required = roles_required("admin")
member_required = roles_required("admin", "user")


@login_manager.unauthorized_handler
def unauthorized() -> Any:
    if is_api_request():
        return jsonify(code="UNAUTHORIZED", message="Sign in first, or send a personal API token."), 401
    if wants_json():
        return jsonify(error="unauthorized", message="Sign in first."), 401
    return redirect(url_for("auth.login", next=request.full_path if request.method == "GET" else None))


def is_api_request() -> bool:
    """Tell whether the request is for the JSON API, which answers JSON whatever the Accept header."""
    return request.path == "/api" or request.path.startswith("/api/")


def wants_json() -> bool:
    """Tell whether the client asked for JSON rather than a page."""
    return is_api_request() or request.blueprint == "hooks" or (  # webhooks answer JSON, whatever they accept
        request.accept_mimetypes.best == "application/json" and not request.headers.get("HX-Request")
    )


def init_app(app: Flask) -> None:
    login_manager.login_view = "auth.login"
    login_manager.session_protection = "strong"
    hops = int(app.config["PROXY_FIX_HOPS"] or 0)
    if hops:  # behind that many trusted proxies: take the client's address and scheme from them
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)
    app.before_request(_require_sign_in)
    app.after_request(_security_headers)


def _require_sign_in() -> Any:
    view = current_app.view_functions.get(request.endpoint or "")
    if view is None or request.endpoint == "static" or getattr(view, PUBLIC_ATTR, False):
        return None
    if not current_user.is_authenticated:
        if _no_users_yet() and not is_api_request():
            return redirect(url_for("auth.setup"))
        return unauthorized()
    return None


def _no_users_yet() -> bool:
    if "no_users" not in g:
        g.no_users = db.session.query(User.id).first() is None
    return g.no_users


def _security_headers(response):
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Frame-Options", "DENY")
    return response
