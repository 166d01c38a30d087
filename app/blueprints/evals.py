"""Evaluations (admins): the datasets, running one on an agent, a run's report, comparing two runs, the export."""

from __future__ import annotations

from flask import Blueprint, abort, jsonify, redirect, render_template, request, url_for
from flask_login import current_user

from app.evals import library, reports
from app.evals.dataset import DatasetInvalid
from app.evals.runner import EvalError, create_run, run_evaluation
from app.extensions import db
from app.models import Agent, EvalCaseResult, EvalRun
from app.web import navigation
from app.web.htmx import is_htmx
from app.web.security import admin_required

bp = Blueprint("evals", __name__)
bp.record_once(lambda state: navigation.add(state.app, "Evaluations", "evals.index", ("admin",)))


def _run(run_id: int) -> EvalRun:
    return db.session.get(EvalRun, run_id) or abort(404)


def _dataset_text(name: str) -> str:
    try:
        return library.read_text(name)
    except library.DatasetMissing:
        abort(404)


@bp.get("/")
@admin_required
def index():
    runs = db.session.scalars(db.select(EvalRun).order_by(EvalRun.id.desc()).limit(50)).all()
    return render_template("evals/index.html", datasets=library.names(), runs=runs)


@bp.get("/datasets/<path:name>")
@admin_required
def dataset(name: str):
    return render_template("evals/dataset.html", name=name, text=_dataset_text(name), errors=[])


@bp.post("/datasets/<path:name>")
@admin_required
def save_dataset(name: str):
    _dataset_text(name)
    text = request.form.get("text", "")
    try:
        library.save_text(name, text)
    except DatasetInvalid as error:
        return render_template("evals/dataset.html", name=name, text=text, errors=error.errors), 422
    return redirect(url_for("evals.dataset", name=name, saved=1))


@bp.post("/agents/<int:agent_id>/runs")
@admin_required
def create(agent_id: int):
    agent = db.session.get(Agent, agent_id) or abort(404)
    level = 2 if request.form.get("level") == "2" else 1
    name = request.form.get("dataset", "")
    try:
        library.path_of(name)  # a dataset of EVALS_PATH by name: a file path is for `flask eval run` only
        run = create_run(name, agent.name, level, user_id=current_user.id)
    except (EvalError, library.DatasetMissing, DatasetInvalid) as error:
        message = "; ".join(str(e) for e in error.errors) if isinstance(error, DatasetInvalid) else str(error)
        return render_template("evals/_agent_panel.html", agent=agent, error=message,
                               datasets=library.names(), last=reports.last_run(agent.id)), 422
    db.session.commit()
    run_evaluation.delay(run.id)
    return redirect(url_for("evals.show", run_id=run.id))


@bp.get("/runs/<int:run_id>")
@admin_required
def show(run_id: int):
    run = _run(run_id)
    if is_htmx():
        return render_template("evals/_progress.html", run=run)
    return render_template("evals/show.html", run=run)


@bp.get("/runs/<int:run_id>/cases/<int:result_id>")
@admin_required
def case(run_id: int, result_id: int):
    result = db.session.get(EvalCaseResult, result_id)
    if result is None or result.run_id != run_id:
        abort(404)
    return render_template("evals/case.html", run=result.run, result=result)


@bp.get("/runs/<int:run_id>/export.json")
@admin_required
def export(run_id: int):
    return jsonify(reports.export(_run(run_id)))


@bp.get("/compare")
@admin_required
def compare():
    before = _run(request.args.get("before", type=int) or 0)
    after = _run(request.args.get("after", type=int) or 0)
    return render_template("evals/compare.html", before=before, after=after, report=reports.compare(before, after))
