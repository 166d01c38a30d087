"""The admin page of the assistant: switch it on or off for the whole instance."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, url_for

from app.assistance.forms import AssistantSettingsForm
from app.assistance.gate import assistant_enabled, set_assistant_enabled
from app.extensions import db
from app.web.security import admin_required

bp = Blueprint("assistant_admin", __name__)


@bp.route("/")
@admin_required
def show():
    return render_template("assistant_admin/settings.html", form=AssistantSettingsForm(enabled=assistant_enabled()))


@bp.route("/", methods=["POST"])
@admin_required
def update():
    form = AssistantSettingsForm()
    if not form.validate_on_submit():
        return render_template("assistant_admin/settings.html", form=form), 422
    set_assistant_enabled(form.enabled.data)
    db.session.commit()
    flash("The assistant is on." if form.enabled.data else "The assistant is off.")
    return redirect(url_for("assistant_admin.show"))
