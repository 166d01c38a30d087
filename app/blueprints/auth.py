"""Sign in, sign out, and the first-run page that creates the first admin."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.accounts import sessions
from app.accounts.forms import SetupForm, SignInForm
from app.accounts.users import create_user
from app.extensions import db
from app.models import User
from app.seed import ensure_defaults
from app.web.security import public

bp = Blueprint("auth", __name__)


@bp.route("/login", methods=["GET", "POST"])
@public
def login():
    if current_user.is_authenticated:
        return redirect(url_for("home.index"))
    if db.session.query(User.id).first() is None:
        return redirect(url_for("auth.setup"))
    form = SignInForm()
    if form.validate_on_submit():
        user = db.session.scalar(db.select(User).where(User.email == form.email.data.strip().lower()))
        if user is not None and user.active and user.check_password(form.password.data):
            sessions.sign_in(user, remember=form.remember.data)
            db.session.commit()
            return redirect(_safe_next(request.args.get("next")))
        form.password.errors.append("Wrong e-mail or password.")
    status = 422 if request.method == "POST" else 200
    return render_template("auth/login.html", form=form), status


@bp.route("/logout", methods=["POST"])
def logout():
    sessions.sign_out()
    db.session.commit()
    flash("You are signed out.")
    return redirect(url_for("auth.login"))


@bp.route("/setup", methods=["GET", "POST"])
@public
def setup():
    if db.session.query(User.id).first() is not None:
        abort(404)
    form = SetupForm()
    del form.role
    if form.validate_on_submit():
        user = create_user(form.email.data, form.name.data, form.password.data, role="admin")
        ensure_defaults()
        db.session.flush()
        sessions.sign_in(user)
        db.session.commit()
        flash("Welcome to Skilldesk. You are its first admin.")
        return redirect(url_for("home.index"))
    status = 422 if request.method == "POST" else 200
    return render_template("auth/setup.html", form=form), status


def _safe_next(target: str | None) -> str:
    """Follow ?next= only within this site."""
    if target:
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc and target.startswith("/") and not target.startswith("//"):
            return target
    return url_for("home.index")
