"""Answering the calls a run left waiting: decide on a tool call, review a plan, answer a question.

Each call is answered once (a conditional update, so two clicks cannot both win, nor a click and the
deadline). When every call the run deferred has its answer, one new run on the same conversation resumes
them all, as the conversation's owner, whoever decided (an approver decides for the run, never runs as
themselves). Who may decide is app/waiting/deciders.py's rule.
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

COMMENT_CHARS = 2_000
DECISIONS = ("once", "run", "always", "deny")
EXPIRY_LABELS = {"deny": "denied", "fail": "the run failed", "continue": "the run went on without it"}
DISCUSS = ("The user did not pick an option and wants to talk this question over first. "
           "Do not choose for them: answer briefly and wait for their message.")


class NotAnswerable(Exception):
    """The call cannot take an answer now: it was answered already, it expired, or the chat is busy."""


def comment_problem(comment: str) -> str | None:
    """Say what is wrong with a decision's comment, or None (control characters are refused before any view)."""
    if len(comment) > COMMENT_CHARS:
        return f"Keep the comment to {COMMENT_CHARS:,} characters (it has {len(comment):,})."
    return None


def get_own_call(call_id: int) -> PendingCall:
    """Return a pending call of the signed-in user's conversation, or 404 (the same for anyone else's)."""
    call = db.session.get(PendingCall, call_id)
    conversation = call.conversation if call is not None else None
    if conversation is None or conversation.user_id != current_user.id or conversation.deleted_at is not None:
        abort(404)
    return call


def may_continue(call: PendingCall) -> bool:
    """Tell whether the conversation's owner may still run its agent (answering resumes it as them)."""
    agent, owner = call.conversation.agent, call.conversation.user
    return agent is not None and owner is not None and owner.active and agent.usable_by(owner)


def decide(call: PendingCall, user: User, decision: str, comment: str = "") -> Run | None:
    """Allow a tool call (once, in this run, always in this chat) or deny it, with an optional comment;
    resume when none waits. `comment_problem` judged the comment."""
    comment = " ".join(comment.split())
    if decision == "deny":
        message = f"The user denied this call: {comment}" if comment else "The user denied this call."
        _answer(call, user, {"approved": False, "message": message}, reason=comment or None)
    else:
        _answer(call, user, {"approved": True, "scope": decision}, scope=decision, reason=comment or None)
        if decision in ("run", "always"):
            _allow_siblings(call, user, decision)
    return resume_when_ready(call)


def review_plan(call: PendingCall, user: User, approve: bool, changes: str = "") -> Run | None:
    """Approve a plan (the run goes on with the configured approval prompt) or ask for changes."""
    if approve:
        answer = {"result": "approved", "instructions": (call.details or {}).get("approval_prompt") or None}
    else:
        answer = {"result": revision_result(changes.strip()), "changes": changes.strip()}
    _answer(call, user, answer)
    return resume_when_ready(call)


def answer_question(call: PendingCall, user: User, text: str | None) -> Run | None:
    """Answer a question with the user's choice or words; None means they would rather discuss it."""
    _answer(call, user, {"result": text.strip() if text is not None else DISCUSS, "discuss": text is None})
    return resume_when_ready(call)


def _answer(call: PendingCall, user: User, answer: dict, **options) -> None:
    if call.expired or call.overdue(utcnow()):
        raise NotAnswerable("This call expired: no decision came in time, and the timeout's choice applies.")
    if not call.pending:
        raise NotAnswerable("This was answered already.")
    if turns.active_run(call.conversation) is not None:
        raise NotAnswerable("Wait for the current answer to finish, or stop it, before deciding.")
    if not record_answer(call, answer, user, **options):
        db.session.rollback()
        raise NotAnswerable("This was answered already.")
    db.session.commit()


def _allow_siblings(call: PendingCall, user: User, scope: str) -> None:
    """After "in this run" or "always", the other waiting calls of the same tool in this batch are allowed too."""
    siblings = db.session.scalars(db.select(PendingCall).where(
        PendingCall.message_id == call.message_id, PendingCall.tool_name == call.tool_name,
        PendingCall.kind == "approval", PendingCall.status == "pending"))
    for sibling in siblings:
        record_answer(sibling, {"approved": True, "scope": scope}, user, scope="standing")
    db.session.commit()


def resume_when_ready(call: PendingCall) -> Run | None:
    """Start the run that carries the answers once every call of the batch has one; returns it.

    The run is the conversation owner's, and continues the work of the run that deferred the calls
    (its origin), so "Always in this run" holds in it.
    """
    batch = (PendingCall.message_id == call.message_id) if call.message_id else (PendingCall.id == call.id)
    waiting = db.session.scalar(
        db.select(db.func.count(PendingCall.id)).where(batch, PendingCall.status == "pending"))
    if waiting:
        return None
    conversation = call.conversation
    deferred_by = db.session.get(Run, call.run_id) if call.run_id else None
    run = Run(conversation_id=conversation.id, user_id=conversation.user_id, agent_id=conversation.agent_id,
              prompt=None, trigger="resume", origin_run_id=deferred_by.origin if deferred_by else None)
    db.session.add(run)
    try:
        db.session.flush()
    except IntegrityError:  # a run of this conversation started meanwhile: the answers go with the next turn
        db.session.rollback()
        return None
    # Whoever claims the batch starts the run; a concurrent answer that lost finds nothing to claim.
    claimed = db.session.execute(
        db.update(PendingCall)
        .where(batch, PendingCall.status.in_(("answered", "expired")), PendingCall.resume_run_id.is_(None))
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
    if call.expired:
        return f"Expired: no decision in time, so {EXPIRY_LABELS.get(answer.get('choice'), 'denied')}"
    if call.kind == "approval":
        record: ApprovalRecord | None = call.approval
        if not answer.get("approved"):
            return "Skipped: you wrote a message instead" if answer.get("message") == SUPERSEDED else "Denied"
        scope = answer.get("scope") or (record.scope if record else "once")
        return {"run": "Allowed in this run", "always": "Allowed in this chat",
                "standing": "Allowed in this chat"}.get(scope, "Allowed once")
    if call.kind == "plan":
        return "Approved" if answer.get("result") == "approved" else "Changes requested"
    return "Discussed instead" if answer.get("discuss") else "Answered"
