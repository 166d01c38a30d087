"""Browsing data tables: lists (search, filters, sorting, columns, layouts), record pages, the assistant."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.assistance.gate import assistant_enabled
from app.assistance.panel import send_from_panel
from app.assistance.preferences import PreferenceError, ui_setting, update_preferences
from app.chat import turns
from app.chat.conversations import transcript
from app.extensions import db
from app.models import Agent, DataTable
from app.tables import browse
from app.tables.fields import KINDS, display, form_value
from app.tables.permissions import allowed, readable_tables
from app.tables.records import OPERATORS, delete_row, form_data, get_row, insert_row, update_row, validate
from app.tables.schema import get_table
from app.web.htmx import is_htmx

bp = Blueprint("data", __name__)



@bp.app_template_filter("cell")
def cell(value, kind: str = "text") -> str:
    """Show a stored value as text in a page."""
    return display(kind, value)


@bp.app_template_filter("input_value")
def input_value(value, kind: str = "text") -> str:
    """Show a stored value as an input expects it."""
    return form_value(kind, value)


def get_table_for(name: str, action: str = "read") -> DataTable:
    """Return the table if the user may do the action: 404 when they may not read it, 403 otherwise."""
    definition = get_table(name)
    if definition is None or not allowed(definition, current_user.role, "read"):
        abort(404)
    if not allowed(definition, current_user.role, action):
        abort(403)
    return definition


def get_record(definition: DataTable, row_id: int) -> dict:
    """Return the row, or 404."""
    row = get_row(definition, row_id)
    if row is None:
        abort(404)
    return row


def assistant_agent(definition: DataTable) -> Agent | None:
    """Return the agent of the table's assistant panel, if the user may chat with it (and it is switched on)."""
    agent = definition.assistant_agent
    if agent is None or not agent.usable_by(current_user) or current_user.role == "guest" or not assistant_enabled():
        return None
    return agent


def can(definition: DataTable) -> dict[str, bool]:
    role = current_user.role
    return {action: allowed(definition, role, action) for action in ("insert", "update", "delete")}


@bp.route("/")
def tables():
    return render_template("data/tables.html", tables=readable_tables(current_user.role))


@bp.route("/<name>")
def index(name: str):
    definition = get_table_for(name)
    query = browse.read_list_query(definition, request.args)
    page, titles = browse.list_rows(definition, query)
    # htmx refreshes the records (Accept on a layout proposal); the toggle and the panels' context come out of band.
    template = "data/_list_refresh.html" if is_htmx() else "data/list.html"
    return render_template(template, table=definition, query=query, page=page, titles=titles,
                           columns=browse.shown_columns(definition, query),
                           layout=_layout(), operators=OPERATORS,
                           can=can(definition),
                           agent=assistant_agent(definition))


def _layout() -> str:
    """The list's layout: a view state in the URL (`?layout=`, for this page only), else the user's preference."""
    asked = request.args.get("layout")
    return asked if asked in ("table", "cards") else ui_setting(current_user, "defaultListLayout")


@bp.route("/<name>/layout", methods=["POST"])
def layout(name: str):
    """Switch between the table and cards layouts; the choice is the user's preference."""
    definition = get_table_for(name)
    try:
        update_preferences(current_user, {"ui": {"defaultListLayout": request.form.get("layout", "")}})
    except PreferenceError:
        abort(400)
    db.session.commit()
    back = request.form.get("next", "")
    prefix = url_for("data.index", name=definition.name)
    # Only this list, with any query: not /data/<name>_other, nor a path that leaves the site.
    same_list = back == prefix or (back.startswith(prefix + "?") and "//" not in back)
    return redirect(back if same_list else prefix)


@bp.route("/<name>/new")
def new(name: str):
    definition = get_table_for(name, "insert")
    return render_template("data/record.html", table=definition, row=None, values={}, errors={},
                           can=can(definition), agent=None, kinds=KINDS)


@bp.route("/<name>", methods=["POST"])
def create(name: str):
    definition = get_table_for(name, "insert")
    data = form_data(definition, request.form)
    values, errors = validate(definition, data)
    if errors:
        return render_template("data/record.html", table=definition, row=None, values=data, errors=errors,
                               can=can(definition), agent=None, kinds=KINDS), 422
    row_id = insert_row(definition, values, user_id=current_user.id)
    flash(f"Added record {row_id}.")
    return redirect(url_for("data.show", name=name, row_id=row_id))


@bp.route("/<name>/<int:row_id>")
def show(name: str, row_id: int):
    definition = get_table_for(name)
    row = get_record(definition, row_id)
    return render_template("data/record.html", table=definition, row=row, values=_as_inputs(definition, row),
                           errors={}, can=can(definition), agent=assistant_agent(definition), kinds=KINDS)


@bp.route("/<name>/<int:row_id>", methods=["POST"])
def update(name: str, row_id: int):
    definition = get_table_for(name, "update")
    row = get_record(definition, row_id)
    data = form_data(definition, request.form)
    values, errors = validate(definition, data)
    template = "data/_record_form.html" if is_htmx() else "data/record.html"
    if errors:
        return render_template(template, table=definition, row=row, values=data, errors=errors,
                               can=can(definition), agent=assistant_agent(definition), kinds=KINDS), 422
    row = update_row(definition, row_id, values, user_id=current_user.id) or row
    if is_htmx():
        return render_template(template, table=definition, row=row, values=_as_inputs(definition, row),
                               errors={}, can=can(definition), saved=True, kinds=KINDS)
    flash("Saved.")
    return redirect(url_for("data.show", name=name, row_id=row_id))


@bp.route("/<name>/<int:row_id>/delete", methods=["POST"])
def delete(name: str, row_id: int):
    definition = get_table_for(name, "delete")
    get_record(definition, row_id)
    delete_row(definition, row_id, user_id=current_user.id)
    flash(f"Deleted record {row_id}.")
    return redirect(url_for("data.index", name=name))


@bp.route("/<name>/assistant", methods=["POST"])
def assistant(name: str):
    """Message the table's assistant; the page context is resolved here, before the agent sees it."""
    definition = get_table_for(name)
    agent = assistant_agent(definition) or abort(404)
    text = (request.form.get("text") or "").strip()
    sent = send_from_panel(current_user, agent, "data", text, request.form.get("conversation_id", type=int),
                           request.form.get("context"))
    if sent.sent and not is_htmx():
        return redirect(url_for("chat.show", conversation_id=sent.conversation.id))
    if sent.error and not is_htmx():
        flash(sent.error, "error")
        return redirect(request.referrer or url_for("data.index", name=name))
    conversation = sent.conversation
    page = render_template("data/_assistant.html", table=definition, agent=agent, conversation=conversation,
                           messages=transcript(conversation) if conversation else [],
                           run=turns.active_run(conversation) if conversation else None, error=sent.error,
                           text=text if sent.error else "", context=request.form.get("context", ""))
    return page, 422 if sent.error else 200


def _as_inputs(definition: DataTable, row: dict) -> dict[str, str]:
    return {f.name: form_value(f.kind, row.get(f.name)) for f in definition.fields}
