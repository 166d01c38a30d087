"""Trigger administration: agents started by table events, webhooks and schedules."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from wtforms.fields.choices import SelectChoice

from app.extensions import db
from app.models import Agent, DataTable, Run, Trigger, TriggerRun, User
from app.models.tables import new_hook_token
from app.triggers.forms import TriggerForm
from app.triggers.schedules import next_time
from app.web.security import admin_required

bp = Blueprint("triggers_admin", __name__)

RECENT_RUNS = 10


def get_trigger(trigger_id: int) -> Trigger:
    return db.get_or_404(Trigger, trigger_id)


def _form(trigger: Trigger | None = None, formdata=None) -> TriggerForm:
    form = TriggerForm(formdata=formdata, obj=trigger if formdata is None else None)
    tables = db.session.scalars(db.select(DataTable).order_by(DataTable.label))
    form.table_id.choices = [SelectChoice(0, "—")] + [SelectChoice(t.id, t.label) for t in tables]
    agents = db.session.scalars(db.select(Agent).order_by(Agent.name))
    form.agent_id.choices = [SelectChoice(a.id, a.name) for a in agents]
    users = db.session.scalars(db.select(User).where(User.active.is_(True), User.role != "guest")
                               .order_by(User.name))
    form.run_as_id.choices = [SelectChoice(u.id, f"{u.name} ({u.role})") for u in users]
    if formdata is None and trigger is not None:
        form.table_id.data = trigger.table_id or 0
    elif formdata is None:
        form.table_id.data = request.args.get("table", 0, type=int)
    return form


def _save(form: TriggerForm, trigger: Trigger) -> None:
    trigger.name = form.name.data.strip()
    trigger.kind = form.kind.data
    trigger.active = form.active.data
    trigger.table_id = form.table_id.data or None
    trigger.events = list(form.events.data or []) if trigger.kind == "event" else []
    trigger.cron = (form.cron.data or "").strip() or None if trigger.kind == "schedule" else None
    trigger.agent_id = form.agent_id.data
    trigger.run_as_id = form.run_as_id.data
    trigger.prompt = form.prompt.data
    trigger.write_back_field = (form.write_back_field.data or "").strip() or None
    if trigger.kind == "webhook" and not trigger.token:
        trigger.token = new_hook_token()


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
    if not form.check(db.session.get(DataTable, form.table_id.data or 0)):
        return render_template("tables/trigger.html", trigger=None, form=form, runs=[]), 422
    trigger = Trigger()
    _save(form, trigger)
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
    if not form.check(db.session.get(DataTable, form.table_id.data or 0)):
        return render_template("tables/trigger.html", trigger=trigger, form=form, runs=_recent_runs(trigger),
                               next_time=next_time), 422
    _save(form, trigger)
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
