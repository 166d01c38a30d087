"""The JSON API's errors: raise `ApiError` from a view; it answers in the one JSON error shape."""

from __future__ import annotations

from app.web.json_errors import CODES, error_response


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


def api_error_response(error: ApiError):
    """Answer a raised ApiError (with Retry-After when it says when to try again)."""
    response, status = error_response(error.status, error.message, error.code, error.fields)
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response, status
