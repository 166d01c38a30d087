"""User administration: create users, change roles, deactivate and delete accounts."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.accounts.forms import EditUserForm, NewUserForm
from app.accounts.users import admin_count, create_user, delete_user
from app.extensions import db
from app.models import CompactionRecord, Conversation, User
from app.web.htmx import is_htmx
from app.web.security import admin_required

bp = Blueprint("admin", __name__)


def get_user(user_id: int) -> User:
    return db.get_or_404(User, user_id)


@bp.route("/users")
@admin_required
def index():
    page = db.paginate(db.select(User).order_by(User.created_at, User.id), per_page=50)
    return render_template("admin/users.html", page=page, form=NewUserForm())


@bp.route("/users", methods=["POST"])
@admin_required
def create():
    form = NewUserForm()
    if not form.validate_on_submit():
        page = db.paginate(db.select(User).order_by(User.created_at, User.id), per_page=50)
        return render_template("admin/users.html", page=page, form=form), 422
    user = create_user(form.email.data, form.name.data, form.password.data, form.role.data)
    db.session.commit()
    flash(f"Created {user.email} ({user.role}).")
    return redirect(url_for("admin.index"))


@bp.route("/users/<int:user_id>", methods=["POST"])
@admin_required
def update(user_id: int):
    user = get_user(user_id)
    form = EditUserForm(obj=user)
    form.user_id = user.id
    if form.validate_on_submit():
        losing_admin = user.role == "admin" and (form.role.data != "admin" or not form.active.data)
        if losing_admin and user.active and admin_count() <= 1:
            form.role.errors = [*form.role.errors, "This is the last active admin."]
        else:
            user.role = form.role.data
            user.active = form.active.data
            db.session.commit()
            if is_htmx():
                return render_template("admin/_user_row.html", user=user, form=EditUserForm(obj=user))
            flash(f"Saved {user.email}.")
            return redirect(url_for("admin.index"))
    if is_htmx():
        return render_template("admin/_user_row.html", user=user, form=form), 422
    page = db.paginate(db.select(User).order_by(User.created_at, User.id), per_page=50)
    return render_template("admin/users.html", page=page, form=NewUserForm(), row_errors={user.id: form}), 422


@bp.route("/users/<int:user_id>/delete", methods=["POST"])
@admin_required
def delete(user_id: int):
    user = get_user(user_id)
    if user.id == current_user.id:
        flash("You cannot delete your own account here.", "error")
    elif user.role == "admin" and user.active and admin_count() <= 1:
        flash("This is the last active admin.", "error")
    else:
        email = user.email
        delete_user(user)
        db.session.commit()
        flash(f"Deleted {email} and everything derived from it.")
    if is_htmx():
        response = redirect(url_for("admin.index"))
        response.headers["HX-Redirect"] = url_for("admin.index")
        return response
    return redirect(request.referrer or url_for("admin.index"))


@bp.route("/conversations/<int:conversation_id>/compactions")
@admin_required
def compactions(conversation_id: int):
    """Diagnostics: what compaction summarized away in a conversation ("Keep a record")."""
    conversation = db.get_or_404(Conversation, conversation_id)
    records = db.session.scalars(db.select(CompactionRecord).where(
        CompactionRecord.conversation_id == conversation.id).order_by(CompactionRecord.id)).all()
    return render_template("admin/compactions.html", conversation=conversation, records=records)
