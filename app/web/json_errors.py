"""The one JSON error shape: `{"code", "message", "fields"?}`, whatever the Accept header.

The JSON API, the webhooks and every JSON answer of the error handler use it; it sits with the web plumbing so
that any area can answer in it.
"""

from __future__ import annotations

from typing import Any

from flask import jsonify

CODES = {
    400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT", 413: "TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE", 422: "VALIDATION_FAILED",
    429: "TOO_MANY_REQUESTS", 500: "SERVER_ERROR", 503: "SERVICE_UNAVAILABLE",
}


def error_response(status: int, message: str, code: str | None = None, fields: dict[str, str] | None = None):
    """Return the JSON error answer."""
    body: dict[str, Any] = {"code": code or CODES.get(status, "ERROR"), "message": message}
    if fields:
        body["fields"] = fields
    return jsonify(body), status
