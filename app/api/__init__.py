"""The JSON API's plumbing: one error shape, strict JSON bodies. The views are in app/blueprints/api.py."""

from __future__ import annotations

from flask import Blueprint

from app.api.errors import ApiError, api_error_response


def init_blueprint(bp: Blueprint) -> None:
    """Give an API blueprint the JSON error answers."""
    bp.register_error_handler(ApiError, api_error_response)
