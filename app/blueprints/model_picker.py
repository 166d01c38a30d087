"""The model picker's endpoint: store which allowed model a conversation's next turns run on."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.chat.conversations import get_own_conversation
from app.chat.pages import render_chat
from app.extensions import db
from app.skills.model_picker import choose_model
from app.web.htmx import is_htmx

bp = Blueprint("model_picker", __name__)


@bp.route("/<int:conversation_id>/model", methods=["POST"])
def update(conversation_id: int):
    conversation = get_own_conversation(conversation_id)
    if conversation.agent is None or not conversation.agent.usable_by(current_user):
        abort(403)
    error = choose_model(conversation, request.form.get("model_config_id", ""))
    if error:
        db.session.rollback()
        if is_htmx():
            return render_template("chat/_composer_extras.html", conversation=conversation,
                                   picker_error=error), 422
        return render_chat(conversation, picker_error=error), 422
    db.session.commit()
    if is_htmx():
        return render_template("chat/_composer_extras.html", conversation=conversation)
    flash("The next answers will use the model you chose.")
    return redirect(url_for("chat.show", conversation_id=conversation.id))
