"""One error handler: full pages, htmx alert fragments, or JSON, by who is asking."""

from __future__ import annotations

import logging
from collections.abc import Callable

from flask import Flask, current_app, jsonify, make_response, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, InternalServerError, MethodNotAllowed, NotFound
from werkzeug.routing import RequestRedirect

from app.database import WriteTimeout, is_locked
from app.extensions import db
from app.web.json_errors import error_response
from app.web.security import is_api_request, wants_json

log = logging.getLogger(__name__)

MESSAGES = {
    400: "The request could not be understood.",
    401: "Sign in first.",
    403: "You do not have access to this page.",
    404: "There is nothing here. It may have been deleted, or the link is wrong.",
    405: "That action is not allowed here.",
    413: "The request is too large.",
    422: "Some fields need attention.",
    429: "Too many requests; wait a moment.",
    503: "The server is busy; try again in a few seconds.",
    500: "Something went wrong on our side. The error has been logged.",
}


def add_error_shape(app: Flask, prefix: str, shape: Callable[[int, str], object]) -> None:
    """Answer errors under a path prefix in another API's own shape (`shape(status, message)`): /v1/, /mcp/."""
    app.extensions.setdefault("error_shapes", []).append((prefix, shape))


def init_app(app: Flask) -> None:
    app.register_error_handler(CSRFError, _csrf_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)


def _csrf_error(error: CSRFError):
    return render_error(400, f"The form expired or was not sent from Skilldesk ({error.description}). "
                             "Reload the page and try again.")


def _http_error(error: HTTPException):
    if isinstance(error, MethodNotAllowed) and not _names_something(error):
        error = NotFound()
    # A description given to abort() says what happened; werkzeug's stock ones give way to ours.
    stock = error.description == type(error).description
    response = make_response(render_error(error.code or 500,
                                          None if stock and error.code in MESSAGES else error.description))
    given = dict(error.get_headers())  # 503 (busy) and 429 say when to try again, 405 what is allowed
    for name in ("Retry-After", "Allow"):
        if given.get(name) and name not in response.headers:
            response.headers[name] = given[name]
    return response


def _names_something(error: MethodNotAllowed) -> bool:
    """Whether a rule of an allowed method takes this path's values: Werkzeug answers 405 before its
    converters read them, so `/api/conversations/<id past the range>` with the wrong method was a 405."""
    adapter = current_app.create_url_adapter(request)
    for method in error.valid_methods or ():
        try:
            adapter.match(method=method)
        except (NotFound, MethodNotAllowed):
            continue
        except RequestRedirect:
            return True
        return True
    return False


def _unexpected(error: Exception):
    if isinstance(error, HTTPException):
        return _http_error(error)
    if is_locked(error):  # SQLite's writer stayed busy past the timeout: the request wrote nothing, say when to retry
        return _http_error(WriteTimeout())
    log.exception("unhandled error on %s %s", request.method, request.path)
    return render_error(500)


def render_error(code: int, message: str | None = None):
    """Answer an error in the shape the client asked for, after rolling back what the request began."""
    # A failed statement leaves the transaction unusable (PendingRollbackError on PostgreSQL), and the
    # page reads the database (the signed-in user, the navigation); nothing of a failed request is kept.
    db.session.rollback()
    message = message or MESSAGES.get(code) or InternalServerError.description
    for prefix, shape in current_app.extensions.get("error_shapes", ()):
        if request.path.startswith(prefix):
            return shape(code, message)
    if is_api_request():
        return error_response(code, message)
    if wants_json():
        return jsonify(error=_slug(code), message=message), code
    if request.headers.get("HX-Request"):
        response = make_response(render_template("_alert.html", level="error", message=message), code)
        response.headers["HX-Retarget"] = "#alerts"
        response.headers["HX-Reswap"] = "beforeend"
        return response
    template = f"errors/{code}.html" if code in (403, 404, 500) else "errors/error.html"
    return render_template(template, code=code, message=message), code


def _slug(code: int) -> str:
    slugs = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
             405: "method_not_allowed", 413: "too_large", 422: "invalid", 500: "server_error",
             503: "busy"}
    return slugs.get(code, "error")
