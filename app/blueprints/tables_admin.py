"""Table administration: tables and their typed fields, permissions, the assistant, CSV import and export."""

from __future__ import annotations

from flask import (
    Blueprint,
    Response,
    abort,
    flash,
    redirect,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from wtforms.fields.choices import SelectChoice

from app.extensions import db
from app.models import Agent, DataTable
from app.models.tables import TABLE_ACTIONS
from app.tables import csv_io
from app.tables.fields import KINDS
from app.tables.forms import ChangeFieldForm, FieldForm, TableForm, TableSettingsForm, UploadForm, add_error
from app.tables.permissions import GRANTABLE, permissions_from_form
from app.tables.schema import (
    SchemaError,
    add_field,
    change_field,
    create_table,
    drop_table,
    get_table,
    remove_field,
)
from app.tables.settings import apply_settings
from app.web.security import admin_required

bp = Blueprint("tables_admin", __name__)


def get_definition(name: str) -> DataTable:
    """Return the table's definition, or 404."""
    definition = get_table(name)
    if definition is None:
        abort(404)
    return definition


def _tables() -> list[DataTable]:
    return list(db.session.scalars(db.select(DataTable).order_by(DataTable.label, DataTable.name)))


@bp.route("/")
@admin_required
def index():
    return render_template("tables/index.html", tables=_tables(), form=TableForm())


@bp.route("/", methods=["POST"])
@admin_required
def create():
    form = TableForm()
    if form.validate_on_submit():
        try:
            definition = create_table(form.name.data.strip(), form.label.data, form.description.data or "")
        except SchemaError as error:
            db.session.rollback()
            add_error(getattr(form, error.field, form.name), str(error))
        else:
            db.session.commit()
            flash(f"Created the table {definition.label}. Add its fields, or import a CSV file.")
            return redirect(url_for("tables_admin.show", name=definition.name))
    return render_template("tables/index.html", tables=_tables(), form=form), 422


def _settings_form(definition: DataTable, formdata=None) -> TableSettingsForm:
    form = TableSettingsForm(formdata=formdata, obj=definition if formdata is None else None,
                             prefix="settings")
    agents = db.session.scalars(db.select(Agent).order_by(Agent.name))
    form.assistant_agent_id.choices = [SelectChoice(0, "No assistant")] + [SelectChoice(a.id, a.name)
                                                                          for a in agents]
    if formdata is None:
        form.assistant_agent_id.data = definition.assistant_agent_id or 0
    return form


def _field_form(definition: DataTable, formdata=None) -> FieldForm:
    form = FieldForm(formdata=formdata, prefix="field")
    form.link_table.choices = [SelectChoice(0, "—")] + [SelectChoice(t.id, t.label) for t in _tables()]
    return form


def render_show(definition: DataTable, status: int = 200, **forms):
    """Render the table's admin page, with any forms that carry errors."""
    changes = {f.id: ChangeFieldForm(formdata=None, prefix=f"f{f.id}", data={
        "name": f.name, "label": f.label, "required": f.required, "choices": "\n".join(f.choices or [])})
        for f in definition.fields}
    changes.update(forms.pop("changes", {}))
    return render_template(
        "tables/show.html", table=definition, kinds=KINDS, actions=TABLE_ACTIONS, grantable=GRANTABLE,
        settings=forms.get("settings") or _settings_form(definition),
        field_form=forms.get("field_form") or _field_form(definition), changes=changes,
    ), status


@bp.route("/<name>")
@admin_required
def show(name: str):
    return render_show(get_definition(name))


@bp.route("/<name>", methods=["POST"])
@admin_required
def update(name: str):
    """Save the label, description, assistant and permissions."""
    definition = get_definition(name)
    form = _settings_form(definition, request.form)
    if not form.validate_on_submit():
        return render_show(definition, 422, settings=form)
    apply_settings(definition, form.label.data, form.description.data or "", permissions_from_form(request.form),
                   form.assistant_agent_id.data or None)
    db.session.commit()
    flash("Saved the table's settings and permissions.")
    return redirect(url_for("tables_admin.show", name=name))


@bp.route("/<name>/fields", methods=["POST"])
@admin_required
def create_field(name: str):
    definition = get_definition(name)
    form = _field_form(definition, request.form)
    if form.validate_on_submit():
        link = db.session.get(DataTable, form.link_table.data) if form.link_table.data else None
        try:
            field = add_field(definition, form.name.data.strip(), form.label.data, form.kind.data,
                              form.required.data, (form.choices.data or "").splitlines(), link)
        except SchemaError as error:
            db.session.rollback()
            add_error(getattr(form, error.field, form.name), str(error))
        else:
            db.session.commit()
            flash(f"Added the field {field.label}.")
            return redirect(url_for("tables_admin.show", name=name))
    return render_show(get_definition(name), 422, field_form=form)


@bp.route("/<name>/fields/<int:field_id>", methods=["POST"])
@admin_required
def update_field(name: str, field_id: int):
    """Rename a field, relabel it, change its choices or whether it is required."""
    definition = get_definition(name)
    field = next((f for f in definition.fields if f.id == field_id), None) or abort(404)
    form = ChangeFieldForm(request.form, prefix=f"f{field.id}")
    if form.validate_on_submit():
        try:
            change_field(definition, field, form.name.data.strip(), form.label.data, form.required.data,
                         (form.choices.data or "").splitlines() if field.kind == "choice" else None)
        except SchemaError as error:
            db.session.rollback()
            add_error(getattr(form, error.field, form.name), str(error))
        else:
            db.session.commit()
            flash(f"Saved the field {field.label}.")
            return redirect(url_for("tables_admin.show", name=name))
    return render_show(get_definition(name), 422, changes={field_id: form})


@bp.route("/<name>/fields/<int:field_id>/delete", methods=["POST"])
@admin_required
def delete_field(name: str, field_id: int):
    definition = get_definition(name)
    field = next((f for f in definition.fields if f.id == field_id), None) or abort(404)
    label = field.label
    remove_field(definition, field)
    db.session.commit()
    flash(f"Removed the field {label} and its values.")
    return redirect(url_for("tables_admin.show", name=name))


@bp.route("/<name>/delete", methods=["POST"])
@admin_required
def delete(name: str):
    definition = get_definition(name)
    if request.form.get("confirm", "").strip() != definition.name:
        flash(f"Type the table's name, {definition.name}, to delete it.", "error")
        return redirect(url_for("tables_admin.show", name=name))
    label = definition.label
    drop_table(definition)
    db.session.commit()
    flash(f"Deleted the table {label}, its records and its triggers.")
    return redirect(url_for("tables_admin.index"))


@bp.route("/<name>/import")
@admin_required
def import_form(name: str):
    return render_template("tables/import.html", table=get_definition(name), form=UploadForm(), plan=None)


@bp.route("/<name>/import", methods=["POST"])
@admin_required
def preview_import(name: str):
    """Read an uploaded CSV and show what importing it would do; nothing is stored yet."""
    definition = get_definition(name)
    form = UploadForm()
    plan = None
    if form.validate_on_submit():
        token = csv_io.save_upload(form.file.data.read())
        try:
            plan = csv_io.plan_import(definition, token, csv_io.load_upload(token))
        except csv_io.ImportError_ as error:
            csv_io.discard_upload(token)
            add_error(form.file, str(error))
    status = 200 if plan is not None else 422
    return render_template("tables/import.html", table=definition, form=form, plan=plan, kinds=KINDS,
                           importable=csv_io.IMPORTABLE_KINDS), status


@bp.route("/<name>/import/confirm", methods=["POST"])
@admin_required
def confirm_import(name: str):
    """Import with the kinds the admin confirmed: everything in one transaction, or nothing."""
    definition = get_definition(name)
    token = request.form.get("token", "")
    kinds = {key.removeprefix("kind-"): value for key, value in request.form.items()
             if key.startswith("kind-")}
    try:
        plan = csv_io.plan_import(definition, token, csv_io.load_upload(token), kinds)
    except csv_io.ImportError_ as error:
        flash(str(error), "error")
        return redirect(url_for("tables_admin.import_form", name=name))
    if any(request.form.get(f"shown-{index}") != kind for index, kind in kinds.items()):
        return _preview(definition, plan, "You changed a kind: check the rows again, then confirm."), 200
    skip_bad = bool(request.form.get("skip_bad"))
    if plan.problems or (plan.bad and not skip_bad) or not plan.rows:
        message = ("Nothing was imported: fix the problems and the bad rows in the file and upload it "
                   "again, or tick “skip the bad rows”." if plan.rows
                   else "Nothing was imported: no row can be imported.")
        return _preview(definition, plan, message), 422
    try:
        count = csv_io.import_rows(definition, plan)
    except SchemaError as error:
        db.session.rollback()
        flash(f"Nothing was imported: {error}", "error")
        return redirect(url_for("tables_admin.import_form", name=name))
    db.session.commit()
    csv_io.discard_upload(token)
    skipped = f", skipped {len(plan.bad)} bad row{'s' if len(plan.bad) != 1 else ''}" if plan.bad else ""
    flash(f"Imported {count} row{'s' if count != 1 else ''}{skipped}.")
    return redirect(url_for("data.index", name=name))


def _preview(definition: DataTable, plan: csv_io.Plan, message: str):
    return render_template("tables/import.html", table=definition, form=UploadForm(), plan=plan, kinds=KINDS,
                           importable=csv_io.IMPORTABLE_KINDS, message=message)


@bp.route("/<name>/export.csv")
@admin_required
def export(name: str):
    definition = get_definition(name)
    response = Response(stream_with_context(csv_io.export_lines(definition)), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{definition.name}.csv"'
    return response
