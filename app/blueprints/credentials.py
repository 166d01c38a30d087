"""A person's own credentials: save, replace and delete the tokens tools use on their behalf."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user

from app.accounts.forms import CredentialForm
from app.extensions import db
from app.guards.credentials import save_credential, user_credentials
from app.models.credentials import Credential
from app.web.form_fields import first_errors
from app.web.security import member_required

bp = Blueprint("credentials", __name__)


def get_own_credential(credential_id: int) -> Credential:
    """Return the signed-in user's credential, or 404 (the same answer for someone else's)."""
    credential = db.session.get(Credential, credential_id)
    if credential is None or credential.user_id != current_user.id:
        abort(404)
    return credential


@bp.route("/")
@member_required
def index():
    return render_template("credentials/index.html", credentials=user_credentials(current_user.id),
                           errors={}, name="")


@bp.route("/", methods=["POST"])
@member_required
def create():
    form = CredentialForm()
    if not form.validate():
        # The value is never sent back, not even in an error page.
        return render_template("credentials/index.html", credentials=user_credentials(current_user.id),
                               errors=first_errors(form), name=form.name.data), 422
    save_credential(current_user.id, form.name.data, form.value.data)
    db.session.commit()
    flash(f"Saved the credential {form.name.data}.")
    return redirect(url_for("credentials.index"))


@bp.route("/<int:credential_id>/delete", methods=["POST"])
@member_required
def delete(credential_id: int):
    credential = get_own_credential(credential_id)
    name = credential.name
    db.session.delete(credential)
    db.session.commit()
    flash(f"Deleted the credential {name}.")
    return redirect(url_for("credentials.index"))
