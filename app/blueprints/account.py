"""A person's own account: change the password, sign out everywhere."""

from __future__ import annotations

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user
from flask_login.config import COOKIE_NAME

from app.accounts import sessions
from app.accounts.forms import PasswordForm
from app.extensions import db

bp = Blueprint("account", __name__)


@bp.route("/")
def show():
    return render_template("account/show.html", form=PasswordForm())


@bp.route("/password", methods=["POST"])
def update_password():
    """Set a new password; every other session of the account ends, this one goes on with a new token."""
    form = PasswordForm()
    if form.validate_on_submit():
        if current_user.check_password(form.current.data):
            user = current_user._get_current_object()
            remember = request.cookies.get(current_app.config.get("REMEMBER_COOKIE_NAME", COOKIE_NAME)) is not None
            user.set_password(form.password.data)  # moves session_generation on: every session ends
            sessions.sign_in(user, remember=remember)
            db.session.commit()
            flash("Your password is changed; you were signed out everywhere else.")
            return redirect(url_for("account.show"))
        form.current.errors.append("This is not your current password.")
    return render_template("account/show.html", form=form), 422


@bp.route("/sessions/end", methods=["POST"])
def sign_out_everywhere():
    """End every session of the account, this one included."""
    sessions.sign_out_everywhere(current_user._get_current_object())
    db.session.commit()
    flash("You are signed out everywhere.")
    return redirect(url_for("auth.login"))
