"""Who may decide on a waiting call, and each person's inbox: the decisions that wait for them.

A call waits for the conversation's owner (their own chats, and the runs of triggers that run as them):
approvals, plans and questions alike. An approval also waits for the owner of the trigger that started
the run, and for the people and roles the agent names as approvers (`Agent.approver_roles`,
`Agent.approver_ids`, set in the agent editor). That holds for every approval, whichever skill or gate
asked for it. Guests decide nothing. Anyone else gets the same 404 as for a call that does not exist.
"""

from __future__ import annotations

from datetime import datetime

from flask import abort
from sqlalchemy.orm import contains_eager

from app.extensions import db
from app.models import Agent, Conversation, PendingCall, Run, Trigger, TriggerRun, User
from app.models.base import utcnow

RECENT = 20


def approver_agents(user: User) -> list[int]:
    """Return the ids of the agents that name the user, or the user's role, as an approver."""
    if user.role == "guest":
        return []
    rows = db.session.execute(db.select(Agent.id, Agent.approver_roles, Agent.approver_ids))
    return [row.id for row in rows if user.role in (row.approver_roles or []) or user.id in (row.approver_ids or [])]


def _trigger_owned_by(user: User):
    """A condition: the call's conversation was started by a trigger the user owns (one uncorrelated subquery)."""
    return PendingCall.conversation_id.in_(
        db.select(Run.conversation_id).join(TriggerRun, TriggerRun.run_id == Run.id)
        .join(Trigger, Trigger.id == TriggerRun.trigger_id).where(Trigger.owner_id == user.id))


def decidable_by(user: User):
    """A condition on PendingCall (joined with its Conversation): the user may decide it."""
    others = db.and_(PendingCall.kind == "approval",
                     db.or_(_trigger_owned_by(user), Conversation.agent_id.in_(approver_agents(user))))
    return db.and_(Conversation.deleted_at.is_(None), db.or_(Conversation.user_id == user.id, others))


def may_decide(call: PendingCall, user: User) -> bool:
    """Tell whether the user may decide on the call (see the module's rule)."""
    if not user.is_authenticated or user.role == "guest" or not user.active:
        return False
    query = (db.select(PendingCall.id).join(Conversation, Conversation.id == PendingCall.conversation_id)
             .where(PendingCall.id == call.id, decidable_by(user)))
    return db.session.scalar(query) is not None


def get_decidable_call(call_id: int, user: User) -> PendingCall:
    """Return a call the user may decide, or 404 (the same answer for a call that is someone else's)."""
    call = db.session.get(PendingCall, call_id)
    if call is None or not may_decide(call, user):
        abort(404)
    return call


def _inbox(user: User):
    return (db.select(PendingCall).join(Conversation, Conversation.id == PendingCall.conversation_id)
            .options(contains_eager(PendingCall.conversation)).where(decidable_by(user)))


def waiting_for(user: User, now: datetime | None = None) -> list[PendingCall]:
    """Return the calls waiting for the user's decision, the oldest first (none for guests)."""
    if user.role == "guest":
        return []
    still = db.or_(PendingCall.expires_at.is_(None), PendingCall.expires_at > (now or utcnow()))
    return list(db.session.scalars(_inbox(user).where(PendingCall.status == "pending", still)
                                   .order_by(PendingCall.created_at, PendingCall.id)))


def recently_decided(user: User) -> list[PendingCall]:
    """Return the latest calls the user could decide that are no longer waiting (decided or expired)."""
    if user.role == "guest":
        return []
    return list(db.session.scalars(_inbox(user).where(PendingCall.status != "pending")
                                   .order_by(PendingCall.answered_at.desc(), PendingCall.id.desc()).limit(RECENT)))


def count_for(user: User, now: datetime | None = None) -> int:
    """Count the calls waiting for the user's decision (the navigation's number)."""
    if user.role == "guest":
        return 0
    still = db.or_(PendingCall.expires_at.is_(None), PendingCall.expires_at > (now or utcnow()))
    query = (db.select(db.func.count(PendingCall.id)).join(Conversation, Conversation.id == PendingCall.conversation_id)
             .where(decidable_by(user), PendingCall.status == "pending", still))
    return db.session.scalar(query) or 0


def deciders(call: PendingCall) -> list[User]:
    """Return the active people who may decide the call (owner, trigger owner, approvers), owner first."""
    conversation = call.conversation
    people: dict[int, User] = {}
    if conversation.user is not None:
        people[conversation.user.id] = conversation.user
    if call.kind == "approval":
        owner = db.session.scalar(
            db.select(User).join(Trigger, Trigger.owner_id == User.id)
            .join(TriggerRun, TriggerRun.trigger_id == Trigger.id).join(Run, Run.id == TriggerRun.run_id)
            .where(Run.conversation_id == conversation.id).limit(1))
        if owner is not None:
            people.setdefault(owner.id, owner)
        agent = conversation.agent
        if agent is not None and (agent.approver_roles or agent.approver_ids):
            named = db.session.scalars(db.select(User).where(db.or_(
                User.role.in_([role for role in agent.approver_roles or [] if role != "guest"]),
                User.id.in_(agent.approver_ids or []))).order_by(User.id))
            for user in named:
                people.setdefault(user.id, user)
    return [user for user in people.values() if user.active and user.role != "guest"]
