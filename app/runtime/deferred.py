"""Deferred tool calls in the runtime: store what a run leaves waiting for a person, answer it on resume.

pydantic-ai does the hard part: a tool that needs approval raises `ApprovalRequired` (or sits behind an
`ApprovalRequiredToolset`), a tool that needs an answer raises `CallDeferred`, and the run ends with
`DeferredToolRequests`. Here those requests become `PendingCall` rows (cards in the chat) and audit
records; the run that resumes gets their answers back as `DeferredToolResults`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flask import Flask
from pydantic_ai import RunContext
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied

from app.extensions import db
from app.models import ApprovalRecord, Conversation, Message, PendingCall, Run, User
from app.models.base import utcnow

log = logging.getLogger(__name__)

# Tools that talk to the user put this in their `CallDeferred` metadata to choose their card,
CARD_KEY = "card"
# and this in their tool metadata, so that tool approval never asks whether they may ask.
ASKS_USER = "asks_user"
CARDS = ("plan", "question")
ARGUMENTS_CHARS = 1_000
SUPERSEDED = "The user did not decide on this call and wrote a new message instead."
DENIED = "The user denied this call."
NO_ANSWER = "This call got no answer: the conversation moved on without it."


@dataclass
class Resumption:
    """What a run needs to pick up the calls the conversation left open."""

    results: DeferredToolResults | None = None
    prompt: str | None = None
    instructions: list[str] = field(default_factory=list)


def open_calls(history: list[ModelMessage]) -> list[ToolCallPart]:
    """Return the tool calls at the end of the model context that have no result yet."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, ModelResponse):
            answered = {getattr(part, "tool_call_id", None) for later in history[index + 1:]
                        if isinstance(later, ModelRequest) for part in later.parts}
            return [call for call in message.tool_calls if call.tool_call_id not in answered]
    return []


def resume(run: Run, history: list[ModelMessage]) -> Resumption:
    """Collect the answers to the calls the context leaves open; the run's message answers the pending ones.

    A typed message answers a pending question (or asks to revise a pending plan) with its text, which is
    then not sent again as a prompt; pending approvals are denied, and the message goes to the model.
    Runs in the request that prepares the run; the caller commits.
    """
    calls = open_calls(history)
    prompt = run.prompt or None
    if not calls:
        return Resumption(prompt=prompt)
    rows = {row.tool_call_id: row for row in db.session.scalars(db.select(PendingCall).where(
        PendingCall.conversation_id == run.conversation_id,
        PendingCall.tool_call_id.in_([call.tool_call_id for call in calls])))}
    if not rows:
        # Not a deferral of ours (a run cut short, say): pydantic-ai closes such calls out itself.
        return Resumption(prompt=prompt)
    user = db.session.get(User, run.user_id) if run.user_id else None
    outcome = Resumption(results=DeferredToolResults(), prompt=prompt)
    typed_answer_used = False
    for call in calls:
        row = rows.get(call.tool_call_id)
        if row is None:
            outcome.results.calls[call.tool_call_id] = NO_ANSWER
            continue
        if row.pending:
            typed = row.kind in CARDS and prompt is not None
            if record_answer(row, _answer_from_message(row, prompt), user, resume_run_id=run.id,
                             reason=None if typed else SUPERSEDED):
                typed_answer_used = typed_answer_used or typed
            else:
                db.session.refresh(row)
        else:
            row.resume_run_id = row.resume_run_id or run.id
        _add_result(outcome, row)
    if typed_answer_used:
        outcome.prompt = None
    return outcome


def _answer_from_message(row: PendingCall, text: str | None) -> dict[str, Any]:
    if row.kind == "approval":
        return {"approved": False, "message": SUPERSEDED}
    if row.kind == "question" and text:
        return {"result": text}
    if row.kind == "plan" and text:
        return {"result": revision_result(text), "changes": text}
    return {"result": NO_ANSWER}


def revision_result(changes: str) -> str:
    """Say to the model that the user wants the plan changed, and how."""
    return f"The user did not approve the plan and asks for these changes: {changes}"


def _add_result(outcome: Resumption, row: PendingCall) -> None:
    answer = row.answer or {"result": NO_ANSWER}
    if row.kind == "approval":
        outcome.results.approvals[row.tool_call_id] = (
            ToolApproved() if answer.get("approved") else ToolDenied(answer.get("message") or DENIED))
    else:
        outcome.results.calls[row.tool_call_id] = answer.get("result", NO_ANSWER)
    if answer.get("instructions"):
        outcome.instructions.append(answer["instructions"])


def record_answer(row: PendingCall, answer: dict[str, Any], user: User | None, *,
                  resume_run_id: str | None = None, scope: str | None = None,
                  reason: str | None = None) -> bool:
    """Answer a pending call once; returns False when someone answered it first. The caller commits."""
    now = utcnow()
    if not _claim(row, "answered", answer, now, resume_run_id=resume_run_id,
                  answered_by_id=user.id if user else None):
        return False
    if row.approval_id is not None:
        record = db.session.get(ApprovalRecord, row.approval_id)
        record.status = "allowed" if answer.get("approved") else "denied"
        record.scope = scope or ("once" if answer.get("approved") else None)
        record.reason = reason
        record.decided_by_id = user.id if user else None
        record.decided_by = user.email if user else None
        record.decided_at = now
    return True


def record_expiry(row: PendingCall, answer: dict[str, Any], reason: str, now: datetime) -> bool:
    """Answer a call nobody decided in time with the timeout's choice; False when a decision came first."""
    if not _claim(row, "expired", answer, now):
        return False
    if row.approval_id is not None:
        record = db.session.get(ApprovalRecord, row.approval_id)
        record.status, record.scope, record.reason, record.decided_at = "expired", None, reason, now
    return True


def _claim(row: PendingCall, status: str, answer: dict[str, Any], now: datetime, **values: Any) -> bool:
    # A conditional update: of two answers at once (two clicks, a click and the deadline) one wins.
    claimed = db.session.execute(
        db.update(PendingCall).where(PendingCall.id == row.id, PendingCall.status == "pending")
        .values(status=status, answer=answer, answered_at=now, **values)
        .execution_options(synchronize_session=False)
    ).rowcount
    if claimed:
        db.session.refresh(row)
    return bool(claimed)


def store_requests(requests: DeferredToolRequests, message: Message, run_id: str, agent_id: int | None,
                   agent_name: str, user_id: int | None, user_email: str,
                   waits: timedelta | None = None) -> list[dict[str, Any]]:
    """Store the calls a run left waiting as cards of its message (and audit records for approvals).

    Every approval is stored the same way, whichever skill or gate asked for it. Returns the summary the
    message's meta lists. `waits` is how long they wait for a decision. The caller commits.
    """
    now = utcnow()
    expires_at = now + waits if waits is not None else None
    items = []
    for call in [*requests.approvals, *requests.calls]:
        details = dict(requests.metadata.get(call.tool_call_id) or {})
        if call in requests.approvals:
            kind = "approval"
        else:
            kind = details.get(CARD_KEY) if details.get(CARD_KEY) in CARDS else "external"
        row = PendingCall(conversation_id=message.conversation_id, message_id=message.id, run_id=run_id,
                          tool_call_id=call.tool_call_id, tool_name=call.tool_name, kind=kind,
                          args=call.args_as_dict(), details=details, status="pending", created_at=now,
                          expires_at=expires_at)
        if kind == "approval":
            row.approval = ApprovalRecord(
                conversation_id=message.conversation_id, run_id=run_id, user_id=user_id,
                requested_by=user_email, agent_id=agent_id, agent_name=agent_name, tool_name=call.tool_name,
                tool_call_id=call.tool_call_id, arguments=arguments_summary(call.args_as_dict()))
        db.session.add(row)
        db.session.flush()
        items.append({"id": row.id, "kind": kind, "tool": call.tool_name,
                      **({"expires_at": expires_at.isoformat()} if expires_at else {})})
    return items


def arguments_summary(args: dict[str, Any]) -> str:
    """Return the arguments as clipped JSON: what the audit needs to say what was asked for."""
    text = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= ARGUMENTS_CHARS else text[:ARGUMENTS_CHARS] + "…"


def always_allowed(conversation_id: int, run_id: str | None = None) -> dict[str, ApprovalRecord]:
    """Return, by tool name, the decisions that allowed a tool "always" in this conversation, or "in this
    run" in the run's chain (its origin and the runs that resumed it)."""
    scopes = ApprovalRecord.scope == "always"
    if run_id is not None:
        origin = db.session.scalar(db.select(db.func.coalesce(Run.origin_run_id, Run.id)).where(Run.id == run_id))
        chain = db.select(Run.id).where(db.or_(Run.id == origin, Run.origin_run_id == origin))
        scopes = db.or_(scopes, db.and_(ApprovalRecord.scope == "run", ApprovalRecord.run_id.in_(chain)))
    records = db.session.scalars(db.select(ApprovalRecord).where(
        ApprovalRecord.conversation_id == conversation_id, ApprovalRecord.status == "allowed",
        scopes).order_by(ApprovalRecord.decided_at))
    return {record.tool_name: record for record in records}


def standing_approvals(app: Flask, conversation_id: int | None, run_id: str | None, agent_id: int | None,
                       agent_name: str, user_id: int | None, user_email: str) -> HandleDeferredToolCalls:
    """Allow, without a card, the calls of tools allowed "always" earlier in this chat; each is recorded."""

    def grant(requests: DeferredToolRequests) -> DeferredToolResults | None:
        with app.app_context():
            granted = always_allowed(conversation_id, run_id)
            allowed = [call for call in requests.approvals if call.tool_name in granted
                       and (requests.metadata.get(call.tool_call_id) or {}).get("allow_always", True)]
            if not allowed:
                return None
            for call in allowed:
                grant_record = granted[call.tool_name]
                db.session.add(ApprovalRecord(
                    conversation_id=conversation_id, run_id=run_id, user_id=user_id, requested_by=user_email,
                    agent_id=agent_id, agent_name=agent_name, tool_name=call.tool_name,
                    tool_call_id=call.tool_call_id, arguments=arguments_summary(call.args_as_dict()),
                    status="allowed", scope="standing", decided_by_id=grant_record.decided_by_id,
                    decided_by=grant_record.decided_by,
                    decided_at=utcnow()))
            db.session.commit()
        return requests.build_results(approvals={call.tool_call_id: ToolApproved() for call in allowed})

    async def handle(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults | None:
        if conversation_id is None or not requests.approvals:
            return None
        # A blocking query here would stall every other run sharing the loop.
        return await asyncio.get_running_loop().run_in_executor(None, grant, requests)

    return HandleDeferredToolCalls(handler=handle)


def never_ask_audit(app: Flask, conversation_id: int | None, run_id: str | None, agent: Any,
                    person: Any) -> Callable[[ToolCallPart, list[str]], None]:
    """Record, in the approvals audit, each destructive call the agent's "never ask" setting let through.

    `agent` is the run's AgentSpec and `person` its Person; the record names the admin who set the tool
    to "never ask" as the one who decided, and the untrusted sources it followed as the reason.
    """

    def record(call: ToolCallPart, sources: list[str]) -> None:
        with app.app_context():
            db.session.add(ApprovalRecord(
                conversation_id=conversation_id, run_id=run_id, user_id=person.id, requested_by=person.email,
                agent_id=agent.id, agent_name=agent.name, tool_name=call.tool_name, tool_call_id=call.tool_call_id,
                arguments=arguments_summary(call.args_as_dict()), status="allowed", scope="never_ask",
                decided_by=agent.never_ask_by or None, decided_at=utcnow(),
                reason=f"Set to never ask; it followed content from {', '.join(sources)}."))
            db.session.commit()

    return record


def purge_pending(conversation: Conversation) -> None:
    """Delete a purged conversation's cards: their arguments, plans and questions are its content.

    The approval records stay: they are the audit trail, and hold only a clipped summary of the arguments.
    Its runs that waited for a decision end `cancelled`: nothing is left to decide.
    """
    db.session.execute(db.delete(PendingCall).where(PendingCall.conversation_id == conversation.id))
    db.session.execute(db.update(Run).where(Run.conversation_id == conversation.id, Run.status == "waiting")
                       .values(status="cancelled", waiting_for=None, finished_at=utcnow())
                       .execution_options(synchronize_session=False))
