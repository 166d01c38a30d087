"""Request-side operations on conversations: start a chat, send a message, start unattended runs."""

from __future__ import annotations

from flask import current_app
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload, undefer

from app.database import commit_keeping_loaded
from app.extensions import db
from app.models import Agent, Conversation, Message, Run, User
from app.models.base import utcnow
from app.models.chat import ACTIVE_STATUSES, ONE_ACTIVE_RUN, new_run_id
from app.models.tables import TRIGGER_SOURCES
from app.runtime import capacity, execution
from app.runtime.turn import prepare


class RunInProgress(Exception):
    """The conversation has a queued or running run already (a database index guarantees one at most)."""


WAIT = "Wait for the current answer, or stop it, before sending another message."


class TooManyRuns(Exception):
    """The user has MAX_RUNS_PER_USER answers under way already (a 429 with Retry-After); nothing was stored."""

    retry_after = capacity.RETRY_AFTER_SECONDS

    def __init__(self, running: int) -> None:
        super().__init__(f"You have {running} answers running; wait for one to finish, or stop one, "
                         "before sending another message.")
        self.running = running


def message_error(text: str, conversation: Conversation | None = None) -> str | None:
    """What is wrong with a message a user sends, or None: the one check of the composer, the data panel and the API.

    `text` is already stripped. With a conversation, a run under way is also an error (the database refuses a
    second run in any case; callers that pass none answer `RunInProgress` with `WAIT`).
    """
    limit = current_app.config["MAX_MESSAGE_CHARS"]
    if not text:
        return "Write a message first."
    if len(text) > limit:
        return f"The message is too long ({len(text):,} characters; the limit is {limit:,})."
    if conversation is not None and active_run(conversation) is not None:
        return WAIT
    return None


# What starting a run reads of a conversation, loaded with it in one query.
FOR_TURN = (joinedload(Conversation.agent).joinedload(Agent.model_config), undefer(Conversation.model_context))


def start_conversation(user: User, agent: Agent, title: str | None = None, source: str = "chat") -> Conversation:
    """Create an empty conversation of the user with an agent; the caller commits."""
    conversation = Conversation(user_id=user.id, agent_id=agent.id, title=title or None, source=source)
    db.session.add(conversation)
    return conversation


def send_message(conversation: Conversation, user: User, text: str, launch: bool = True,
                 extras: dict | None = None) -> tuple[Message, Run]:
    """Store the user's message and its run in one commit, then start the run.

    `extras` (JSON, written by server code only: a resolved page context, a trigger's row) are kept
    on the message and handed to the run's skills; `extras["instructions"]` are added for that run.
    A run started here is prepared in the same transaction from the rows this request already holds;
    with `launch=False` it stays queued for `execution.launch`. Raises `RunInProgress`, having stored
    nothing, when the conversation has a queued or running run already, `capacity.Saturated`
    (a 503 with Retry-After), having stored nothing, when this process runs or streams all it can, and
    `TooManyRuns`, having stored nothing, when the user has MAX_RUNS_PER_USER answers under way.

    The per-user bound is counted in the database, in the transaction that adds the run, so it holds
    across workers (each process knows only its own runs): on PostgreSQL the user's row is locked first
    (FOR NO KEY UPDATE), so two sends of one person count one after the other; on SQLite the run's
    insert takes the one write lock, and the count after it sees every committed run. Unattended runs
    (`launch=False`: triggers) are neither bounded nor counted.
    """
    if launch:
        capacity.admit_turn(current_app)
        db.session.execute(db.select(User.id).where(User.id == user.id).with_for_update(key_share=True))
    run = Run(id=new_run_id(), conversation_id=conversation.id, user_id=user.id, agent_id=conversation.agent_id,
              prompt=text, trigger=conversation.source if conversation.source != "copy" else "chat", status="queued")
    message = Message(conversation_id=conversation.id, role="user", content=text, run=run,
                      meta={"extras": extras} if extras else {})
    db.session.add_all([run, message])
    conversation.updated_at = utcnow()
    try:
        turn = prepare(run, conversation, conversation.agent, user, dict(extras or {})) if launch else None
        db.session.flush()  # the one-active-run index answers here
    except IntegrityError as error:
        db.session.rollback()
        if ONE_ACTIVE_RUN in str(error.orig) or "runs.conversation_id" in str(error.orig):
            raise RunInProgress(conversation.id) from None
        raise
    if launch and (running := _answers_under_way(user) - 1) >= int(current_app.config["MAX_RUNS_PER_USER"]):
        db.session.rollback()
        raise TooManyRuns(running)
    commit_keeping_loaded()  # the view renders these rows next: no reload
    if turn is not None:
        execution.start(current_app._get_current_object(), turn)
    return message, run


def _answers_under_way(user: User) -> int:
    """Count the user's queued and running runs that a person started (this transaction's new one included)."""
    return db.session.scalar(db.select(db.func.count(Run.id)).where(
        Run.user_id == user.id, Run.status.in_(ACTIVE_STATUSES), Run.trigger.not_in(TRIGGER_SOURCES)))


def active_run(conversation: Conversation) -> Run | None:
    """Return the conversation's run that is still queued or running, if any."""
    return db.session.scalar(
        db.select(Run).where(Run.conversation_id == conversation.id, Run.status.in_(("queued", "running")))
        .order_by(Run.created_at.desc()).limit(1)
    )


def run_unattended(agent: Agent, user: User, prompt: str, source: str, title: str | None = None,
                   timeout: float = 600.0) -> Run:
    """Run an agent with no listener (table events, webhooks, schedules) and wait for it to end."""
    conversation = start_conversation(user, agent, title=title, source=source)
    db.session.flush()
    _message, run = send_message(conversation, user, prompt, launch=False)
    run_id = run.id
    execution.launch(current_app._get_current_object(), run_id).result(timeout)
    db.session.expire_all()
    return db.session.get(Run, run_id)
