"""The JSON API's one error shape: `{"code", "message", "fields"?}`, whatever the Accept header."""

from __future__ import annotations

from typing import Any

from flask import jsonify

CODES = {
    400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT", 413: "TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE", 422: "VALIDATION_FAILED",
    429: "TOO_MANY_REQUESTS", 500: "SERVER_ERROR", 503: "SERVICE_UNAVAILABLE",
}


class ApiError(Exception):
    """An answer of the API that is not a success; raise it from a view."""

    def __init__(self, status: int, message: str, code: str | None = None,
                 fields: dict[str, str] | None = None, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status
        self.code = code or CODES.get(status, "ERROR")
        self.message = message
        self.fields = fields or {}


def error_response(status: int, message: str, code: str | None = None, fields: dict[str, str] | None = None):
    """Return the JSON error answer."""
    body: dict[str, Any] = {"code": code or CODES.get(status, "ERROR"), "message": message}
    if fields:
        body["fields"] = fields
    return jsonify(body), status


def api_error_response(error: ApiError):
    """Answer a raised ApiError (with Retry-After when it says when to try again)."""
    response, status = error_response(error.status, error.message, error.code, error.fields)
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response, status
