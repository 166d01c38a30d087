"""A person's personal API tokens, on their account: create (shown once), list with their last use, revoke."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user

from app.api.tokens import TokenError, create_token, revoke_token, tokens_of
from app.assistance.forms import ApiTokenForm
from app.extensions import db
from app.models import Agent
from app.models.base import utcnow
from app.web.security import member_required

bp = Blueprint("tokens", __name__)


def _usable_agents() -> list[Agent]:
    return [agent for agent in db.session.scalars(db.select(Agent).order_by(Agent.name))
            if agent.usable_by(current_user)]


def _form(**kwargs) -> ApiTokenForm:
    form = ApiTokenForm(**kwargs)
    form.agents.choices = [(agent.id, agent.name) for agent in _usable_agents()]
    return form


def _page(form: ApiTokenForm, secret: str | None = None, status: int = 200):
    return render_template("tokens/index.html", form=form, tokens=tokens_of(current_user), secret=secret,
                           now=utcnow()), status


@bp.route("/")
@member_required
def index():
    return _page(_form())


@bp.route("/", methods=["POST"])
@member_required
def create():
    form = _form()
    if not form.validate_on_submit():
        return _page(form, status=422)
    chosen = [db.session.get(Agent, agent_id) for agent_id in form.agents.data or []]
    try:
        _token, secret = create_token(current_user, form.name.data, form.scopes.data, form.days.data,
                                      agents=chosen or None, rate_limit=form.rate_limit.data)
    except TokenError as error:
        form.name.errors = [*form.name.errors, str(error)]
        return _page(form, status=422)
    db.session.commit()
    # Shown in this answer only: a redirect would have to carry the secret in the session cookie.
    page, status = _page(_form(formdata=None), secret=secret, status=201)
    return page, status, {"Cache-Control": "no-store"}  # nor kept by a cache or the back button


@bp.route("/<int:token_id>/revoke", methods=["POST"])
@member_required
def revoke(token_id: int):
    token_ids = {token.id for token in tokens_of(current_user)}
    if token_id not in token_ids or not revoke_token(current_user, token_id):
        abort(404)
    db.session.commit()
    flash("Revoked the token. Clients that use it get 401 from now on.")
    return redirect(url_for("tokens.index"))
