"""Cards of calls that wait for the user: allow or deny a tool call, approve or revise a plan, answer.

Every endpoint answers with the card; an htmx request also gets the resumed run appended to the transcript.
Only the conversation's owner reaches a card (anyone else gets 404); the audit trail is for admins.
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.chat import approvals
from app.chat.cards import card_template
from app.extensions import db
from app.models import ApprovalRecord, PendingCall
from app.web.htmx import is_htmx
from app.web.security import admin_required

bp = Blueprint("approvals", __name__)
AUDIT_PAGE_SIZE = 50


@bp.route("/<int:call_id>")
def show(call_id: int):
    call = approvals.get_own_call(call_id)
    return render_template(card_template(call), call=call)


@bp.route("/<int:call_id>/decision", methods=["POST"])
def decide(call_id: int):
    call = approvals.get_own_call(call_id)
    decision = request.form.get("decision", "")
    if call.kind != "approval" or decision not in ("once", "always", "deny"):
        abort(400)
    if decision == "always" and not (call.details or {}).get("allow_always", True):
        abort(400)
    return _respond(call, approvals.decide, decision, request.form.get("reason", ""))


@bp.route("/<int:call_id>/plan", methods=["POST"])
def review(call_id: int):
    call = approvals.get_own_call(call_id)
    decision = request.form.get("decision", "")
    if call.kind != "plan" or decision not in ("approve", "revise"):
        abort(400)
    changes = (request.form.get("changes") or "").strip()
    if decision == "revise" and not changes:
        return _invalid(call, "Say what should change in the plan.")
    if len(changes) > current_app.config["MAX_MESSAGE_CHARS"]:
        return _invalid(call, f"Use at most {current_app.config['MAX_MESSAGE_CHARS']:,} characters.")
    return _respond(call, approvals.review_plan, decision == "approve", changes)


@bp.route("/<int:call_id>/answer", methods=["POST"])
def answer(call_id: int):
    call = approvals.get_own_call(call_id)
    if call.kind != "question":
        abort(400)
    text = None if request.form.get("discuss") else (request.form.get("answer") or "").strip()
    if text is not None and not text:
        return _invalid(call, "Choose an option or write an answer.")
    if text is not None and len(text) > current_app.config["MAX_MESSAGE_CHARS"]:
        return _invalid(call, f"Use at most {current_app.config['MAX_MESSAGE_CHARS']:,} characters.")
    return _respond(call, approvals.answer_question, text)


@bp.route("/audit")
@admin_required
def index():
    """The audit trail of tool approvals, newest first."""
    page = request.args.get("page", 1, type=int)
    records = db.paginate(db.select(ApprovalRecord).order_by(ApprovalRecord.id.desc()), page=page,
                          per_page=AUDIT_PAGE_SIZE, error_out=False)
    return render_template("approvals/index.html", records=records)


def _respond(call: PendingCall, action, *args):
    """Answer the call, then show the card as decided (409 when it could not take the answer)."""
    if not approvals.may_continue(call, current_user):
        abort(403, "You can no longer use this agent.")
    try:
        run = action(call, current_user, *args)
    except approvals.NotAnswerable as problem:
        db.session.refresh(call)
        if is_htmx():
            return render_template(card_template(call), call=call, error=str(problem)), 409
        flash(str(problem), "error")
        return redirect(url_for("chat.show", conversation_id=call.conversation_id))
    db.session.refresh(call)
    if is_htmx():
        return render_template("chat/_answered.html", call=call, run=run)
    return redirect(url_for("chat.show", conversation_id=call.conversation_id))


def _invalid(call: PendingCall, error: str):
    if is_htmx():
        return render_template(card_template(call), call=call, error=error, form=request.form), 422
    flash(error, "error")
    return redirect(url_for("chat.show", conversation_id=call.conversation_id))
