"""Share links: a read-only snapshot for chosen people, revocable, optionally expiring."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.chat.conversations import get_own_conversation, transcript
from app.chat.forms import ShareForm, audiences
from app.chat.sharing import copy_snapshot, snapshot_of
from app.extensions import db
from app.models import Share
from app.models.base import utcnow
from app.web.htmx import is_htmx
from app.web.security import member_required, public

bp = Blueprint("shares", __name__)

def get_own_share(share_id: int) -> Share:
    share = db.session.get(Share, share_id)
    if share is None or share.owner_id != current_user.id:
        abort(404)
    return share


@bp.route("/chat/<int:conversation_id>/share")
def dialog(conversation_id: int):
    conversation = get_own_conversation(conversation_id)
    return _render_dialog(conversation)


def _render_dialog(conversation, form: ShareForm | None = None, status=200, created=None):
    links = db.session.scalars(db.select(Share).where(
        Share.conversation_id == conversation.id, Share.revoked_at.is_(None))
        .order_by(Share.created_at.desc()))
    return render_template("shares/_dialog.html", conversation=conversation, links=list(links),
                           audiences=audiences(), form=form or ShareForm(formdata=None),
                           created=created), status


@bp.route("/chat/<int:conversation_id>/shares", methods=["POST"])
def create(conversation_id: int):
    conversation = get_own_conversation(conversation_id)
    form = ShareForm()
    if not form.validate():
        return _render_dialog(conversation, form, 422)
    share = Share(conversation_id=conversation.id, owner_id=current_user.id, audience=form.audience.data,
                  snapshot=snapshot_of(transcript(conversation)), snapshot_at=utcnow(), expires_at=form.expires_at,
                  users=form.people)
    db.session.add(share)
    db.session.commit()
    if is_htmx():
        return _render_dialog(conversation, created=share)
    flash("Link created.")
    return redirect(url_for("shares.index"))


@bp.route("/shares")
def index():
    links = db.session.scalars(db.select(Share).where(
        Share.owner_id == current_user.id, Share.revoked_at.is_(None)).order_by(Share.created_at.desc()))
    return render_template("shares/index.html", links=[s for s in links if s.conversation.deleted_at is None],
                           now=utcnow())


@bp.route("/shares/<int:share_id>/revoke", methods=["POST"])
def revoke(share_id: int):
    share = get_own_share(share_id)
    share.revoked_at = utcnow()
    db.session.commit()
    flash("Link revoked; it no longer opens.")
    return redirect(request.referrer or url_for("shares.index"))


@bp.route("/shares/<int:share_id>/snapshot", methods=["POST"])
def refresh(share_id: int):
    share = get_own_share(share_id)
    if share.conversation.deleted_at is not None:
        abort(404)
    share.snapshot = snapshot_of(transcript(share.conversation))
    share.snapshot_at = utcnow()
    db.session.commit()
    flash("Snapshot updated: the link now shows the conversation as it is.")
    return redirect(request.referrer or url_for("shares.index"))


def get_open_share(token: str) -> Share:
    """Return a live share the visitor may open, or 404 for everything else."""
    share = db.session.scalar(db.select(Share).where(Share.token == token))
    if share is None or not share.live():
        abort(404)
    if share.audience == "public":
        if not current_app.config["ALLOW_PUBLIC_LINKS"]:
            abort(404)
        return share
    if not current_user.is_authenticated:
        return None  # the caller sends the visitor to sign in
    if share.audience == "users" and current_user.id != share.owner_id and current_user not in share.users:
        abort(404)
    return share


@bp.route("/s/<token>")
@public
def view(token: str):
    share = get_open_share(token)
    if share is None:
        return current_app.login_manager.unauthorized()
    return render_template("shares/view.html", share=share)


@bp.route("/s/<token>/copy", methods=["POST"])
@member_required
def copy(token: str):
    share = get_open_share(token)
    agent = share.conversation.agent
    if agent is None or not agent.usable_by(current_user):
        flash("You cannot use the agent of this conversation, so it cannot be continued as your own.",
              "error")
        return redirect(url_for("shares.view", token=token))
    conversation = copy_snapshot(share, current_user)
    db.session.commit()
    flash("This is your own copy; the original is unchanged.")
    return redirect(url_for("chat.show", conversation_id=conversation.id))
