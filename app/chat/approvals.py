"""Answering the calls a run left waiting: decide on a tool call, review a plan, answer a question.

Each call is answered once (a conditional update, so two clicks cannot both win). When every call the
run deferred has its answer, one new run on the same conversation resumes them all.
"""

from __future__ import annotations

from flask import abort, current_app
from flask_login import current_user
from sqlalchemy.exc import IntegrityError

from app.chat import turns
from app.extensions import db
from app.models import ApprovalRecord, PendingCall, Run, User
from app.models.base import utcnow
from app.runtime import execution
from app.runtime.deferred import SUPERSEDED, record_answer, revision_result

REASON_CHARS = 500
DISCUSS = ("The user did not pick an option and wants to talk this question over first. "
           "Do not choose for them: answer briefly and wait for their message.")


class NotAnswerable(Exception):
    """The call cannot take an answer now: it was answered already, or the chat is busy."""


def get_own_call(call_id: int) -> PendingCall:
    """Return a pending call of the signed-in user's conversation, or 404 (the same for anyone else's)."""
    call = db.session.get(PendingCall, call_id)
    conversation = call.conversation if call is not None else None
    if conversation is None or conversation.user_id != current_user.id or conversation.deleted_at is not None:
        abort(404)
    return call


def may_continue(call: PendingCall, user: User) -> bool:
    """Tell whether the user may still run the conversation's agent (answering resumes it)."""
    agent = call.conversation.agent
    return agent is not None and agent.usable_by(user)


def decide(call: PendingCall, user: User, decision: str, reason: str = "") -> Run | None:
    """Allow a tool call (once, or always in this chat) or deny it with a reason; resume when none waits."""
    reason = " ".join(reason.split())[:REASON_CHARS]
    if decision == "deny":
        message = f"The user denied this call: {reason}" if reason else "The user denied this call."
        _answer(call, user, {"approved": False, "message": message}, reason=reason or None)
    else:
        _answer(call, user, {"approved": True}, scope="always" if decision == "always" else "once")
        if decision == "always":
            _allow_siblings(call, user)
    return resume_when_ready(call, user)


def review_plan(call: PendingCall, user: User, approve: bool, changes: str = "") -> Run | None:
    """Approve a plan (the run goes on with the configured approval prompt) or ask for changes."""
    if approve:
        answer = {"result": "approved", "instructions": (call.details or {}).get("approval_prompt") or None}
    else:
        answer = {"result": revision_result(changes.strip()), "changes": changes.strip()}
    _answer(call, user, answer)
    return resume_when_ready(call, user)


def answer_question(call: PendingCall, user: User, text: str | None) -> Run | None:
    """Answer a question with the user's choice or words; None means they would rather discuss it."""
    _answer(call, user, {"result": text.strip() if text is not None else DISCUSS, "discuss": text is None})
    return resume_when_ready(call, user)


def _answer(call: PendingCall, user: User, answer: dict, **options) -> None:
    if not call.pending:
        raise NotAnswerable("This was answered already.")
    if turns.active_run(call.conversation) is not None:
        raise NotAnswerable("Wait for the current answer to finish, or stop it, before deciding.")
    if not record_answer(call, answer, user, **options):
        db.session.rollback()
        raise NotAnswerable("This was answered already.")
    db.session.commit()


def _allow_siblings(call: PendingCall, user: User) -> None:
    """After "always", the other waiting calls of the same tool in this batch are allowed too."""
    siblings = db.session.scalars(db.select(PendingCall).where(
        PendingCall.message_id == call.message_id, PendingCall.tool_name == call.tool_name,
        PendingCall.kind == "approval", PendingCall.status == "pending"))
    for sibling in siblings:
        record_answer(sibling, {"approved": True}, user, scope="standing")
    db.session.commit()


def resume_when_ready(call: PendingCall, user: User) -> Run | None:
    """Start the run that carries the answers once every call of the batch has one; returns it."""
    batch = (PendingCall.message_id == call.message_id) if call.message_id else (PendingCall.id == call.id)
    waiting = db.session.scalar(
        db.select(db.func.count(PendingCall.id)).where(batch, PendingCall.status == "pending"))
    if waiting:
        return None
    conversation = call.conversation
    run = Run(conversation_id=conversation.id, user_id=user.id, agent_id=conversation.agent_id, prompt=None,
              trigger="resume")
    db.session.add(run)
    try:
        db.session.flush()
    except IntegrityError:  # a run of this conversation started meanwhile: the answers go with the next turn
        db.session.rollback()
        return None
    # Whoever claims the batch starts the run; a concurrent answer that lost finds nothing to claim.
    claimed = db.session.execute(
        db.update(PendingCall)
        .where(batch, PendingCall.status == "answered", PendingCall.resume_run_id.is_(None))
        .values(resume_run_id=run.id).execution_options(synchronize_session=False)).rowcount
    if not claimed:
        db.session.rollback()
        return None
    conversation.updated_at = utcnow()
    db.session.commit()
    execution.launch(current_app._get_current_object(), run.id)
    return run


def decision_label(call: PendingCall) -> str:
    """Say in a few words how a call was answered, for its card."""
    answer = call.answer or {}
    if call.kind == "approval":
        record: ApprovalRecord | None = call.approval
        if not answer.get("approved"):
            return "Skipped: you wrote a message instead" if answer.get("message") == SUPERSEDED else "Denied"
        return {"always": "Allowed in this chat", "standing": "Allowed in this chat"}.get(
            record.scope if record else "", "Allowed once")
    if call.kind == "plan":
        return "Approved" if answer.get("result") == "approved" else "Changes requested"
    return "Discussed instead" if answer.get("discuss") else "Answered"
