"""Small htmx conventions: branch on the HX-Request header, never on element ids."""

from __future__ import annotations

from flask import Response, make_response, request


def is_htmx() -> bool:
    """Tell whether htmx sent this request (and wants a fragment)."""
    return request.headers.get("HX-Request") == "true" and request.headers.get("HX-Boosted") != "true"


def retarget(body: str, selector: str, swap: str = "outerHTML") -> Response:
    """Send a fragment to another element than the one the request targeted (errors beside fields)."""
    response = make_response(body)
    response.headers["HX-Retarget"] = selector
    response.headers["HX-Reswap"] = swap
    return response
