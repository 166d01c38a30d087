"""Every personal API token of the site, for admins: who holds it, what it opens, its last use; revoke any."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user

from app.api.tokens import every_token, revoke_token
from app.extensions import db
from app.models.base import utcnow
from app.web.security import admin_required

bp = Blueprint("token_admin", __name__)


@bp.route("/")
@admin_required
def index():
    page = db.paginate(every_token(), per_page=50)
    return render_template("tokens/admin.html", page=page, now=utcnow())


@bp.route("/<int:token_id>/revoke", methods=["POST"])
@admin_required
def revoke(token_id: int):
    if not revoke_token(current_user, token_id):
        abort(404)
    db.session.commit()
    flash("Revoked the token. Clients that use it get 401 from now on.")
    return redirect(url_for("token_admin.index"))
