"""Decisions that wait for people: the inbox, the cards of the chat, and the approvals audit.

The inbox (`/approvals/`) lists, for the signed-in person, the calls waiting for their decision: those
of their own chats and of the triggers they own, and those of agents that name them or their role as
approvers (app/waiting/deciders.py). Its count in the navigation is `/approvals/count`, refreshed live.
Allow once, Always in this run, Deny with a comment work from the inbox and from the chat's card; Always
in this chat is the chat owner's. Plans and questions are answered by the chat's owner on their card.
Anyone who may not decide gets 404; the audit trail is for admins.
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.assistance.gate import assistant_enabled
from app.chat import approvals
from app.chat.call_summaries import folded_arguments
from app.chat.cards import card_template
from app.extensions import db
from app.models import ApprovalRecord, PendingCall
from app.runtime.waiting import trigger_of
from app.waiting import deciders
from app.web.htmx import is_htmx
from app.web.security import admin_required

bp = Blueprint("approvals", __name__)
AUDIT_PAGE_SIZE = 50
CHANGED = {"HX-Trigger": "approvals-changed"}  # the navigation's count refreshes at once


def _members_only() -> None:
    if current_user.role == "guest":
        abort(403, "Guests decide nothing: there is no inbox for them.")


@bp.route("/")
def index():
    """The signed-in person's inbox: what waits for their decision, then what was decided lately."""
    _members_only()
    return render_template("approvals/index.html", calls=deciders.waiting_for(current_user),
                           recent=deciders.recently_decided(current_user), about=_about)


@bp.route("/count")
def count():
    """The number of decisions waiting for the signed-in person (the navigation polls it)."""
    shown = assistant_enabled() and current_user.role != "guest"
    return render_template("approvals/_count.html", count=deciders.count_for(current_user) if shown else 0)


@bp.route("/<int:call_id>")
def show(call_id: int):
    """One waiting call, as the inbox shows it (the link notifications give)."""
    call = deciders.get_decidable_call(call_id, current_user)
    return render_template("approvals/show.html", call=call, about=_about)


@bp.route("/<int:call_id>/decision", methods=["POST"])
def decide(call_id: int):
    call = deciders.get_decidable_call(call_id, current_user)
    in_inbox = request.form.get("view") == "inbox" or call.conversation.user_id != current_user.id
    decision = request.form.get("decision", "")
    if call.kind != "approval" or decision not in approvals.DECISIONS:
        abort(400)
    if decision in ("run", "always") and not (call.details or {}).get("allow_always", True):
        abort(400)
    if decision == "always" and in_inbox:
        abort(400)  # "Always in this chat" is the chat owner's, on the chat's card
    comment = request.form.get("comment", request.form.get("reason", ""))
    if problem := approvals.comment_problem(comment):
        return _invalid(call, problem, in_inbox)
    return _respond(call, approvals.decide, in_inbox, decision, comment)


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
    return _respond(call, approvals.review_plan, False, decision == "approve", changes)


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
    return _respond(call, approvals.answer_question, False, text)


@bp.route("/audit")
@admin_required
def audit():
    """The audit trail of tool approvals, newest first."""
    page = request.args.get("page", 1, type=int)
    records = db.paginate(db.select(ApprovalRecord).order_by(ApprovalRecord.id.desc()), page=page,
                          per_page=AUDIT_PAGE_SIZE, error_out=False)
    return render_template("approvals/audit.html", records=records)


def _about(call: PendingCall) -> dict:
    """What the inbox says about a call beside the call itself: agent, trigger, whose run, the arguments."""
    conversation = call.conversation
    trigger = trigger_of(conversation.id)
    return {"agent": conversation.agent.name if conversation.agent else "(a deleted agent)",
            "trigger": trigger.name if trigger else None, "owner": conversation.user,
            "own": conversation.user_id == current_user.id, "arguments": folded_arguments(call.args)}


def _respond(call: PendingCall, action, in_inbox: bool, *args):
    """Answer the call, then show it as decided (409 with its state when it could not take the answer)."""
    if not approvals.may_continue(call):
        abort(403, "The chat's owner can no longer use this agent.")
    try:
        run = action(call, current_user, *args)
    except approvals.NotAnswerable as problem:
        db.session.refresh(call)
        return _shown(call, in_inbox, error=str(problem), status=409)
    db.session.refresh(call)
    if is_htmx() and not in_inbox:
        return render_template("chat/_answered.html", call=call, run=run), CHANGED
    return _shown(call, in_inbox)


def _shown(call: PendingCall, in_inbox: bool, error: str | None = None, status: int = 200):
    if is_htmx():
        template = "approvals/_item.html" if in_inbox else card_template(call)
        return render_template(template, call=call, about=_about, error=error), status, CHANGED
    if error:
        flash(error, "error")
    if in_inbox:
        return redirect(url_for("approvals.index"))
    return redirect(url_for("chat.show", conversation_id=call.conversation_id))


def _invalid(call: PendingCall, error: str, in_inbox: bool = False):
    if is_htmx():
        template = "approvals/_item.html" if in_inbox else card_template(call)
        return render_template(template, call=call, about=_about, error=error, form=request.form), 422
    if in_inbox:  # the inbox again, the error beside the comment, the comment kept
        return render_template("approvals/index.html", calls=deciders.waiting_for(current_user),
                               recent=deciders.recently_decided(current_user), about=_about,
                               errors={call.id: error}, form=request.form), 422
    flash(error, "error")
    return redirect(url_for("approvals.index") if in_inbox else url_for("chat.show",
                                                                       conversation_id=call.conversation_id))
