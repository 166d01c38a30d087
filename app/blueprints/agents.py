"""The agent editor (admin): name, instructions, model, audience and an ordered list of skills."""

from __future__ import annotations

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.agents import editor
from app.agents.preview import run_preview
from app.extensions import db
from app.models import ROLES, Agent, ModelConfig
from app.runtime.builder import AgentSpec, Person
from app.runtime.model_spec import ModelSpec
from app.skills import registry
from app.web.security import admin_required

bp = Blueprint("agents", __name__)


def get_agent(agent_id: int) -> Agent:
    return db.get_or_404(Agent, agent_id)


def render_editor(form: editor.AgentForm, agent: Agent | None, status: int = 200):
    models = db.session.scalars(db.select(ModelConfig).order_by(ModelConfig.name)).all()
    return render_template("agents/edit.html", form=form, agent=agent, models=models, roles=ROLES,
                           registry=registry()), status


@bp.route("/")
@admin_required
def index():
    agents = db.session.scalars(db.select(Agent).order_by(Agent.name)).all()
    return render_template("agents/index.html", agents=agents)


@bp.route("/new")
@admin_required
def new():
    return render_editor(editor.AgentForm.of(None, registry()), None)


@bp.route("/", methods=["POST"])
@admin_required
def create():
    return _submit(None)


@bp.route("/<int:agent_id>")
@admin_required
def edit(agent_id: int):
    agent = get_agent(agent_id)
    return render_editor(editor.AgentForm.of(agent, registry()), agent)


@bp.route("/<int:agent_id>", methods=["POST"])
@admin_required
def update(agent_id: int):
    return _submit(get_agent(agent_id))


def _submit(agent: Agent | None):
    form = editor.read_form(registry(), agent.id if agent else None)
    if form.action.data != "save":  # Add, Up, Down, Remove: show the changed list, judge it on Save
        return render_editor(form, agent)
    if not form.valid:
        return render_editor(form, agent, 422)
    if agent is None:
        agent = Agent()
        db.session.add(agent)
    editor.save(agent, form, by=current_user.email)
    editor.save_approvers(agent, form)
    db.session.commit()
    flash(f"Saved the agent {agent.name}.")
    return redirect(url_for("agents.edit", agent_id=agent.id))


@bp.route("/preview", methods=["POST"])
@admin_required
def preview():
    """Run one message against the agent as it stands in the form (saved or not)."""
    form = editor.read_form(registry(), request.form.get("agent_id", type=int))
    prompt = (request.form.get("preview_prompt") or "").strip()
    form.name.errors = []  # a preview needs no unique name
    if not prompt:
        return render_template("agents/_preview.html", error="Write a message to try."), 422
    if not form.valid:
        return render_template("agents/_preview.html", error="Fix the highlighted fields first."), 422
    values = form.values()
    config = db.session.get(ModelConfig, values["model_config_id"]) if values["model_config_id"] \
        else db.session.scalar(db.select(ModelConfig).where(ModelConfig.is_default.is_(True)))
    spec = AgentSpec(None, values["name"] or "Preview", values["instructions"], tuple(form.stored_skills()),
                     values["max_requests"], ModelSpec.of(config))
    result = run_preview(current_app._get_current_object(), spec, Person.of(current_user), prompt)
    return render_template("agents/_preview.html", preview=result, prompt=prompt)


@bp.route("/<int:agent_id>/delete", methods=["POST"])
@admin_required
def delete(agent_id: int):
    agent = get_agent(agent_id)
    name = agent.name
    db.session.delete(agent)
    db.session.commit()
    flash(f"Deleted the agent {name}. Its conversations stay readable.")
    return redirect(url_for("agents.index"))
