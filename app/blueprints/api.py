"""The JSON API under /api/: the signed-in user's preferences and what the assistant offers."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, request
from flask_login import current_user

from app import api
from app.api.body import json_body
from app.api.errors import ApiError
from app.api.openapi import (
    CapabilitiesData,
    Document,
    Error,
    PreferenceQuery,
    Preferences,
    PreferencesData,
    document,
    documented,
)
from app.assistance.capabilities import capabilities_of
from app.assistance.preferences import PreferenceError, delete_preferences, preferences_of, update_preferences
from app.extensions import db
from app.web.security import public

bp = Blueprint("api", __name__)
api.init_blueprint(bp)


@bp.route("/me/preferences")
@documented(tags=("preferences",), HTTP_200=PreferencesData)
def preferences_show():
    """Return the user's preferences, by namespace."""
    return jsonify(data=preferences_of(current_user))


@bp.route("/me/preferences", methods=["PATCH"])
@documented(json=Preferences, tags=("preferences",), HTTP_200=PreferencesData)
def preferences_update():
    """Merge `{namespace: {key: value}}` into the preferences; null removes a key."""
    try:
        result = update_preferences(current_user, json_body())
    except PreferenceError as error:
        raise ApiError(422, str(error), "PREFERENCES_INVALID", error.fields) from None
    db.session.commit()
    return jsonify(data=result)


@bp.route("/me/preferences", methods=["DELETE"])
@documented(tags=("preferences",), query=PreferenceQuery, HTTP_200=PreferencesData)
def preferences_delete():
    """Remove `?namespace=` (all its keys) or one `?namespace=&key=`."""
    namespace = request.args.get("namespace")
    if not namespace:
        raise ApiError(422, "Say which namespace to remove (?namespace=, and &key= for one key).",
                       fields={"namespace": "required"})
    result = delete_preferences(current_user, namespace, request.args.get("key") or None)
    db.session.commit()
    return jsonify(data=result)


@bp.route("/assistant/capabilities")
@documented(tags=("assistant",), HTTP_200=CapabilitiesData)
def capabilities():
    """Say what the assistant offers this user; not behind the switch, so a client learns it is off."""
    if current_user.role == "guest":
        abort(403)
    return jsonify(data=capabilities_of(current_user))


@bp.route("/openapi.json")
@public
@documented(tags=("openapi",), errors={"HTTP_422": Error}, HTTP_200=Document)
def openapi():
    """The OpenAPI 3.1 document of this API, generated from the views' models."""
    return jsonify(document(current_app))
