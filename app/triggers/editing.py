"""A trigger's form with its choices, and saving a checked form: shared by the admin page and the tools."""

from __future__ import annotations

from werkzeug.datastructures import MultiDict
from wtforms.fields.choices import SelectChoice

from app.extensions import db
from app.models import Agent, DataTable, Trigger, User
from app.models.tables import new_hook_token
from app.triggers.forms import TriggerForm


def trigger_form(trigger: Trigger | None = None, formdata: MultiDict | None = None, table_id: int = 0,
                 csrf: bool = True) -> TriggerForm:
    """Return the trigger form with the current tables, agents and users to choose from."""
    form = TriggerForm(formdata=formdata, obj=trigger if formdata is None else None,
                       meta={} if csrf else {"csrf": False})
    tables = db.session.scalars(db.select(DataTable).order_by(DataTable.label))
    form.table_id.choices = [SelectChoice(0, "—")] + [SelectChoice(t.id, t.label) for t in tables]
    agents = db.session.scalars(db.select(Agent).order_by(Agent.name))
    form.agent_id.choices = [SelectChoice(a.id, a.name) for a in agents]
    users = db.session.scalars(db.select(User).where(User.active.is_(True), User.role != "guest")
                               .order_by(User.name))
    form.run_as_id.choices = [SelectChoice(u.id, f"{u.name} ({u.role})") for u in users]
    form.owner_id.choices = [SelectChoice(0, "— (only the user it runs as, and the agent's approvers)"),
                             *form.run_as_id.choices]
    if formdata is None and trigger is not None:
        form.table_id.data = trigger.table_id or 0
        form.owner_id.data = trigger.owner_id or 0
    elif formdata is None:
        form.table_id.data = table_id
    return form


def check_form(form: TriggerForm) -> bool:
    """Validate the form with the rules that depend on its table; errors go beside the fields."""
    return form.check(db.session.get(DataTable, form.table_id.data or 0))


def save_trigger(form: TriggerForm, trigger: Trigger) -> None:
    """Write a checked form to the trigger; the caller adds and commits."""
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


def save_waiting(form: TriggerForm, trigger: Trigger) -> None:
    """Write the checked form's settings for runs that wait for people (the admin page's alone); no commit."""
    trigger.owner_id = form.owner_id.data or None
    trigger.decision_timeout_minutes = form.decision_timeout_minutes.data
    trigger.on_timeout = form.on_timeout.data
    trigger.notify_url = (form.notify_url.data or "").strip() or None
    trigger.notify_arguments = bool(form.notify_arguments.data)
