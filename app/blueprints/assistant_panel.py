"""The Workspace assistant's panel, available from every page: send a message with the page's context."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user, login_required

from app.assistance.panel import send_from_panel, workspace_agent
from app.chat import turns
from app.chat.conversations import transcript
from app.web.htmx import is_htmx

bp = Blueprint("assistant_panel", __name__)


@bp.route("/", methods=["POST"])
@login_required
def send():
    agent = workspace_agent(current_user) or abort(404)
    text = (request.form.get("text") or "").strip()
    sent = send_from_panel(current_user, agent, "panel", text, request.form.get("conversation_id", type=int),
                           request.form.get("context"))
    if not is_htmx():  # without JavaScript the chat page shows the answer
        if sent.error:
            flash(sent.error, "error")
            return redirect(request.referrer or url_for("home.index"))
        return redirect(url_for("chat.show", conversation_id=sent.conversation.id))
    conversation = sent.conversation
    return render_template("assistant/_panel.html", agent=agent, conversation=conversation,
                           messages=transcript(conversation) if conversation else [],
                           run=turns.active_run(conversation) if conversation else None, error=sent.error,
                           text=text if sent.error else "", context=request.form.get("context", "")
                           ), 422 if sent.error else 200
