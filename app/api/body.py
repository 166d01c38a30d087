"""Request bodies of the JSON API, parsed as strict JSON (no NaN or Infinity, no duplicate keys)."""

from __future__ import annotations

from typing import Any

from flask import request

from app.api.errors import ApiError
from app.policy.schema_subset import InvalidJSON, loads_json


def json_body() -> Any:
    """Return the request's JSON body; a 415 for another media type, a 400 for text that is not strict JSON."""
    if request.mimetype != "application/json":
        raise ApiError(415, "Send the body as application/json.")
    try:
        return loads_json(request.get_data(cache=True))
    except InvalidJSON as error:
        raise ApiError(400, f"The body is not strict JSON: {error}", "INVALID_JSON") from None


def json_object() -> dict[str, Any]:
    """Return the request's JSON body, which must be an object (422 otherwise)."""
    body = json_body()
    if not isinstance(body, dict):
        raise ApiError(422, "The body must be a JSON object.")
    return body
