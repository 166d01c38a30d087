"""Model configurations (admin): provider, model, key variable, context window, settings, profiles."""

from __future__ import annotations

from flask import Blueprint, current_app, flash, redirect, render_template, url_for

from app.agents.connection import check_connection
from app.agents.model_forms import read_model_form
from app.extensions import db
from app.models import ModelConfig
from app.models.agents import MODEL_ROLES, PROVIDERS
from app.runtime.model_spec import ModelSpec
from app.web.security import admin_required

bp = Blueprint("models", __name__)


def get_config(config_id: int) -> ModelConfig:
    return db.get_or_404(ModelConfig, config_id)


def render_form(config: ModelConfig | None, values: dict, errors: dict, status: int = 200):
    return render_template("models/edit.html", config=config, values=values, errors=errors,
                           providers=PROVIDERS, roles=MODEL_ROLES), status


@bp.route("/")
@admin_required
def index():
    configs = db.session.scalars(db.select(ModelConfig).order_by(ModelConfig.name)).all()
    return render_template("models/index.html", configs=configs, providers=PROVIDERS)


@bp.route("/new")
@admin_required
def new():
    return render_form(None, {"provider": "openai-compatible", "context_window": 32000, "timeout": 60,
                              "retries": 0, "profiles": {}}, {})


@bp.route("/", methods=["POST"])
@admin_required
def create():
    return _submit(None)


@bp.route("/<int:config_id>")
@admin_required
def edit(config_id: int):
    config = get_config(config_id)
    values = {c: getattr(config, c) for c in ("name", "provider", "model_name", "base_url", "api_key_env",
                                              "context_window", "max_tokens", "temperature", "timeout", "retries",
                                              "profiles", "is_default")}
    return render_form(config, values, {})


@bp.route("/<int:config_id>", methods=["POST"])
@admin_required
def update(config_id: int):
    return _submit(get_config(config_id))


def _submit(config: ModelConfig | None):
    values, errors = read_model_form(config.id if config else None)
    if errors:
        return render_form(config, values, errors, 422)
    if config is None:
        config = ModelConfig()
        db.session.add(config)
    for key, value in values.items():
        setattr(config, key, value)
    if config.is_default:
        db.session.flush()  # a new configuration needs its id before the others are unset
        db.session.execute(db.update(ModelConfig).where(ModelConfig.id != config.id).values(is_default=False))
    db.session.commit()
    flash(f"Saved the model configuration {config.name}.")
    return redirect(url_for("models.edit", config_id=config.id))


@bp.route("/<int:config_id>/test", methods=["POST"])
@admin_required
def test(config_id: int):
    """Make one tiny request and show whether it worked, in Skilldesk's words (app/agents/connection.py)."""
    config = get_config(config_id)
    ok, text = check_connection(current_app._get_current_object(), ModelSpec.of(config))
    return render_template("models/_test_result.html", ok=ok, text=text)


@bp.route("/<int:config_id>/delete", methods=["POST"])
@admin_required
def delete(config_id: int):
    config = get_config(config_id)
    if config.is_default:
        flash("Choose another default before deleting this configuration.", "error")
        return redirect(url_for("models.edit", config_id=config.id))
    db.session.delete(config)
    db.session.commit()
    flash("Deleted. Agents that used it now run on the default model.")
    return redirect(url_for("models.index"))
