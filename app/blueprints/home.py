"""The landing page after sign-in, and the health check."""

from __future__ import annotations

from flask import Blueprint, jsonify, redirect, url_for

from app.web.security import public

bp = Blueprint("home", __name__)


@bp.route("/")
def index():
    return redirect(url_for("chat.index"))


@bp.route("/healthz")
@public
def health():
    return jsonify(status="ok")
