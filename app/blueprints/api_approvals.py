"""The JSON API of calls that wait for people: what waits for the token's user, deciding, answering.

`GET /api/approvals` lists the calls waiting for the user's decision, as the inbox does (their own chats
and triggers, the agents that name them as approvers); `POST /api/approvals/<id>` decides an approval;
`POST /api/conversations/<id>/answers` answers a question or a plan of the user's own conversation. Anyone
who may not decide gets 404; a call decided or expired already is a 409 with its current state.
"""

from __future__ import annotations

from flask import Blueprint, jsonify, request
from flask_login import current_user

from app import api
from app.api.approval_models import Answer, AnsweredData, CallOut, CallPage, Conflict, Decision
from app.api.body import json_body
from app.api.chat_models import dump, parse
from app.api.errors import ApiError
from app.api.openapi import PageQuery, documented
from app.api.query import paging
from app.api.tokens import opens_agent_id
from app.chat import approvals
from app.chat.conversations import get_own_conversation
from app.extensions import db
from app.models import PendingCall
from app.waiting import deciders

bp = Blueprint("api_approvals", __name__)
api.init_blueprint(bp)


def _no_guests() -> None:
    if current_user.role == "guest":
        raise ApiError(403, "Guests decide nothing.")


@bp.route("/approvals")
@documented(tags=("approvals",), query=PageQuery, HTTP_200=CallPage)
def index():
    """The calls waiting for the user's decision, oldest first (`?page=&perPage=`, 30 by default)."""
    _no_guests()
    page, per_page = paging(request.args.get("page"), request.args.get("perPage"))
    calls = [call for call in deciders.waiting_for(current_user) if opens_agent_id(call.conversation.agent_id)]
    shown = calls[(page - 1) * per_page:page * per_page]
    return jsonify(data=[dump(CallOut.of(call)) for call in shown],
                   meta={"page": page, "perPage": per_page, "hasNext": len(calls) > page * per_page})


@bp.route("/approvals/<int:call_id>", methods=["POST"])
@documented(json=Decision, tags=("approvals",), HTTP_200=AnsweredData, HTTP_409=Conflict)
def decide(call_id: int):
    """Allow (once, or in this run) or deny a waiting tool call, with an optional comment."""
    call = db.session.get(PendingCall, call_id)
    if call is None or not deciders.may_decide(call, current_user) or not opens_agent_id(call.conversation.agent_id):
        raise ApiError(404, "There is no call with that id waiting for your decision.")
    if call.kind != "approval":
        raise ApiError(422, "This call is a question or a plan: answer it at "
                            f"/api/conversations/{call.conversation_id}/answers.", fields={"callId": "not an approval"})
    body = parse(Decision, json_body())
    if body.decision == "allow" and body.scope == "run" and not (call.details or {}).get("allow_always", True):
        raise ApiError(422, "This call can only be allowed once.", fields={"scope": "only once"})
    decision = "deny" if body.decision == "deny" else body.scope
    return _answered(call, approvals.decide, decision, body.comment)


@bp.route("/conversations/<int:conversation_id>/answers", methods=["POST"])
@documented(json=Answer, tags=("approvals",), HTTP_200=AnsweredData, HTTP_409=Conflict)
def answer(conversation_id: int):
    """Answer a waiting question (`answer`, or `discuss`) or plan (`decision`, `changes`) of your conversation."""
    conversation = get_own_conversation(conversation_id)
    _no_guests()
    if not opens_agent_id(conversation.agent_id):
        raise ApiError(404, "There is no such conversation of yours.")
    body = parse(Answer, json_body())
    call = db.session.get(PendingCall, body.call_id)
    if call is None or call.conversation_id != conversation.id:
        raise ApiError(404, "This conversation has no waiting call with that id.")
    if call.kind == "question":
        text = body.answer.strip() if body.answer else ""
        if not body.discuss and not text:
            raise ApiError(422, "Give an answer, or discuss: true.", fields={"answer": "required"})
        return _answered(call, approvals.answer_question, None if body.discuss else text)
    if call.kind == "plan":
        changes = (body.changes or "").strip()
        if body.decision is None or (body.decision == "revise" and not changes):
            raise ApiError(422, "Approve the plan, or revise it with the changes you want.",
                           fields={"decision": "approve | revise", "changes": "required when revising"})
        return _answered(call, approvals.review_plan, body.decision == "approve", changes)
    raise ApiError(422, f"This call is an approval: decide it at /api/approvals/{call.id}.",
                   fields={"callId": "an approval"})


def _answered(call: PendingCall, action, *args):
    """Answer the call; 200 with its state and the run that resumed, 409 with its state if it took no answer."""
    if not approvals.may_continue(call):
        raise ApiError(403, "The conversation's owner can no longer use its agent.")
    try:
        run = action(call, current_user, *args)
    except approvals.NotAnswerable as problem:
        db.session.refresh(call)
        state = CallOut.of(call)
        code = {"expired": "EXPIRED", "answered": "ALREADY_DECIDED"}.get(state.status, "RUN_IN_PROGRESS")
        return jsonify(code=code, message=str(problem), call=dump(state)), 409
    db.session.refresh(call)
    return jsonify(data={"call": dump(CallOut.of(call)), "runId": run.id if run else None})
