"""The bodies of the API's waiting calls: what waits (`CallOut`), a decision, an answer (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from flask import url_for
from pydantic import BaseModel, Field

from app.api.chat_models import Body, DatabaseId
from app.chat.approvals import COMMENT_CHARS
from app.chat.call_summaries import call_summary
from app.models import PendingCall
from app.runtime.waiting import trigger_of


class AnswerRoute(Body):
    """How to answer a waiting call: the request to send (`body` shows its members and their values)."""

    method: str = "POST"
    href: str
    body: dict[str, str]


class CallDecision(Body):
    outcome: str
    """allowed, denied, approved, changes requested, answered, discussed, or expired (no decision in time)."""
    by: str | None = None
    """The e-mail of whoever decided (none for an expired call)."""
    at: datetime | None = None
    scope: str | None = None
    comment: str | None = None
    choice: str | None = None
    """For an expired call: the timeout's choice that applied (deny, fail, continue)."""
    answer: str | None = None
    changes: str | None = None


class CallOut(Body):
    """A call a run left waiting for a person."""

    id: int
    kind: str
    """approval (run a tool), plan (approve a plan), question (answer it), external (a result from outside)."""
    tool: str
    status: str
    """pending, answered or expired (a call past its deadline is expired, whether or not the scheduler ran)."""
    conversation_id: int
    run_id: str | None
    agent: str | None
    trigger: str | None
    created_at: datetime
    expires_at: datetime | None
    arguments: dict[str, Any] | None = None
    question: str | None = None
    options: list[str] | None = None
    plan: str | None = None
    decision: CallDecision | None = None
    answer: AnswerRoute | None = None
    """While it waits: where and how to answer it."""

    @classmethod
    def of(cls, call: PendingCall) -> CallOut:
        summary = call_summary(call)
        conversation = call.conversation
        trigger = trigger_of(conversation.id)
        return cls(id=call.id, kind=call.kind, tool=call.tool_name, status=summary["status"],
                   conversation_id=call.conversation_id, run_id=call.run_id,
                   agent=conversation.agent.name if conversation.agent else None,
                   trigger=trigger.name if trigger else None, created_at=call.created_at, expires_at=call.expires_at,
                   arguments=summary.get("arguments"), question=summary.get("question"),
                   options=summary.get("options"), plan=summary.get("plan"),
                   decision=CallDecision(**{**summary["decision"], "at": call.answered_at})
                   if summary["decision"] else None,
                   answer=answer_route(call) if summary["status"] == "pending" else None)


def answer_route(call: PendingCall) -> AnswerRoute | None:
    """Return how a waiting call is answered through the API (None for a result from outside)."""
    if call.kind == "approval":
        return AnswerRoute(href=url_for("api_approvals.decide", call_id=call.id),
                           body={"decision": "allow | deny", "scope": "once | run", "comment": "optional"})
    href = url_for("api_approvals.answer", conversation_id=call.conversation_id)
    if call.kind == "question":
        return AnswerRoute(href=href, body={"callId": str(call.id), "answer": "an option or your own words"})
    if call.kind == "plan":
        return AnswerRoute(href=href, body={"callId": str(call.id), "decision": "approve | revise",
                                            "changes": "what should change, when revising"})
    return None


class Decision(Body):
    decision: Literal["allow", "deny"]
    """Allow the tool call, or deny it."""
    scope: Literal["once", "run"] = "once"
    """An allowed call: this call only, or this tool for the rest of this run (where the call offers it)."""
    comment: str = Field("", max_length=COMMENT_CHARS)
    """Optional, at most 2,000 characters; a denial's comment goes to the agent."""


class Answer(Body):
    call_id: DatabaseId
    """The waiting question or plan of this conversation."""
    answer: str | None = Field(None, min_length=1)
    """A question's answer: one of its options, or your own words."""
    discuss: bool = False
    """A question: talk it over first instead of answering (the agent waits for your message)."""
    decision: Literal["approve", "revise"] | None = None
    """A plan: approve it, or ask for changes (then give `changes`)."""
    changes: str | None = Field(None, min_length=1)


class Answered(BaseModel):
    call: CallOut
    runId: str | None  # noqa: N815 (the wire's name)
    """The run that carries the answers, once every call of its batch has one (follow it at /api/agent/<runId>)."""


class AnsweredData(BaseModel):
    data: Answered


class CallPage(BaseModel):
    data: list[CallOut]


class Conflict(BaseModel):
    code: str
    message: str
    call: CallOut
