"""The public webhook endpoint: `POST /hooks/<token>` with a JSON body starts the trigger's agent.

The token is the only credential: unguessable, revocable, compared by a unique-index lookup.
Every answer is JSON. A wrong or revoked token is 404, a body over WEBHOOK_MAX_BYTES is 413,
anything but a JSON object is 415 (wrong type) or 400 (not parseable, not an object).
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from app.extensions import csrf, db
from app.models import Trigger
from app.triggers.dispatch import on_webhook
from app.web.bodies import body_limit
from app.web.security import public

bp = Blueprint("hooks", __name__)
# Webhooks come from other systems, which have no session and no CSRF token.
csrf.exempt(bp)


def _error(status: int, code: str, message: str):
    return jsonify(error=code, message=message), status


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error_):
    limit = current_app.config["WEBHOOK_MAX_BYTES"]
    return _error(413, "too_large", f"The body is larger than {limit:,} bytes.")


@bp.route("/<token>", methods=["POST"])
@public
@body_limit("WEBHOOK_MAX_BYTES")  # with or without a Content-Length: 413 beyond it
def receive(token: str):
    trigger = db.session.scalar(db.select(Trigger).where(Trigger.token == token, Trigger.kind == "webhook"))
    if trigger is None or not trigger.active:
        return _error(404, "not_found", "There is no webhook at this address.")
    if not request.is_json:
        return _error(415, "unsupported_media_type", "Send the body as JSON (Content-Type: application/json)")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return _error(400, "bad_request", "The body must be a JSON object.")
    run = on_webhook(trigger, body)
    if run is None:
        return _error(409, "not_runnable", "The webhook has no active user to run as; an admin must set one.")
    return jsonify(status=run.status, run=run.id), 202
