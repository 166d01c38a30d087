"""Trigger administration: agents started by table events, webhooks and schedules."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.extensions import db
from app.models import Run, Trigger, TriggerRun
from app.models.tables import new_hook_token
from app.triggers.editing import check_form, save_trigger, save_waiting, trigger_form
from app.triggers.forms import TriggerForm
from app.triggers.schedules import next_time
from app.web.security import admin_required

bp = Blueprint("triggers_admin", __name__)

RECENT_RUNS = 10


def get_trigger(trigger_id: int) -> Trigger:
    return db.get_or_404(Trigger, trigger_id)


def _form(trigger: Trigger | None = None, formdata=None) -> TriggerForm:
    form = trigger_form(trigger, formdata, table_id=request.args.get("table", 0, type=int))
    if trigger is None and formdata is None:  # a new trigger's waiting calls are its maker's to decide
        form.owner_id.data = current_user.id
    return form


@bp.route("/")
@admin_required
def index():
    query = db.select(Trigger).order_by(Trigger.name, Trigger.id)
    table_id = request.args.get("table", type=int)
    if table_id:
        query = query.where(Trigger.table_id == table_id)
    return render_template("tables/triggers.html", triggers=list(db.session.scalars(query)),
                           next_time=next_time)


@bp.route("/new")
@admin_required
def new():
    return render_template("tables/trigger.html", trigger=None, form=_form(), runs=[])


@bp.route("/", methods=["POST"])
@admin_required
def create():
    form = _form(formdata=request.form)
    if not check_form(form):
        return render_template("tables/trigger.html", trigger=None, form=form, runs=[]), 422
    trigger = Trigger()
    save_trigger(form, trigger)
    save_waiting(form, trigger)
    db.session.add(trigger)
    db.session.commit()
    flash(f"Created the trigger {trigger.name}.")
    return redirect(url_for("triggers_admin.show", trigger_id=trigger.id))


@bp.route("/<int:trigger_id>")
@admin_required
def show(trigger_id: int):
    trigger = get_trigger(trigger_id)
    return render_template("tables/trigger.html", trigger=trigger, form=_form(trigger),
                           runs=_recent_runs(trigger), next_time=next_time)


@bp.route("/<int:trigger_id>", methods=["POST"])
@admin_required
def update(trigger_id: int):
    trigger = get_trigger(trigger_id)
    form = _form(trigger, request.form)
    if not check_form(form):
        return render_template("tables/trigger.html", trigger=trigger, form=form, runs=_recent_runs(trigger),
                               next_time=next_time), 422
    save_trigger(form, trigger)
    save_waiting(form, trigger)
    db.session.commit()
    flash(f"Saved the trigger {trigger.name}.")
    return redirect(url_for("triggers_admin.show", trigger_id=trigger.id))


@bp.route("/<int:trigger_id>/token", methods=["POST"])
@admin_required
def rotate_token(trigger_id: int):
    """Give the webhook a new address; the old one stops working at once."""
    trigger = get_trigger(trigger_id)
    if trigger.kind != "webhook":
        abort(404)
    trigger.token = new_hook_token()
    db.session.commit()
    flash("The webhook has a new address; the old one no longer works.")
    return redirect(url_for("triggers_admin.show", trigger_id=trigger.id))


@bp.route("/<int:trigger_id>/delete", methods=["POST"])
@admin_required
def delete(trigger_id: int):
    trigger = get_trigger(trigger_id)
    name = trigger.name
    db.session.delete(trigger)
    db.session.commit()
    flash(f"Deleted the trigger {name}. Its runs stay listed at Runs.")
    return redirect(url_for("triggers_admin.index"))


def _recent_runs(trigger: Trigger) -> list[Run]:
    """Return the latest runs this trigger started."""
    return list(db.session.scalars(
        db.select(Run).join(TriggerRun, TriggerRun.run_id == Run.id)
        .where(TriggerRun.trigger_id == trigger.id).order_by(Run.created_at.desc()).limit(RECENT_RUNS)))
