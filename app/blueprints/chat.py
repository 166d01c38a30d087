"""The chat view: previous chats on the left, the transcript and the composer on the right."""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.assistance.context import ContextRejected, parse_context_text
from app.assistance.forms import AcceptPreferenceForm
from app.chat import conversations, turns
from app.chat.compaction import parse_command
from app.chat.conversations import get_own_conversation, transcript
from app.chat.exports import export_json, export_markdown
from app.chat.pages import render_chat, sidebar_page
from app.chat.purge import purge_conversation
from app.extensions import db
from app.models import Agent, Conversation, Message
from app.policy.bidi import bidi_problem
from app.skills.compaction import compact_stored_context, compaction_config
from app.web.htmx import is_htmx, retarget

bp = Blueprint("chat", __name__)

TITLE_MAX = 200


def usable_agents() -> list[Agent]:
    """Return the agents the signed-in user may chat with."""
    agents = db.session.scalars(db.select(Agent).order_by(Agent.name))
    return [agent for agent in agents if agent.usable_by(current_user)]


@bp.route("/")
def index():
    search = request.args.get("q", "")[:200]
    page = request.args.get("page", 1, type=int)  # "Older chats" without JavaScript
    return render_template("chat/index.html", agents=usable_agents(), sidebar=sidebar_page(page, search),
                           search=search)


@bp.route("/sidebar")
def sidebar():
    search = request.args.get("q", "")[:200]
    page = request.args.get("page", 1, type=int)
    return render_template("chat/_sidebar_items.html", sidebar=sidebar_page(page, search), search=search)


@bp.route("/", methods=["POST"])
def create():
    if current_user.role == "guest":
        abort(403)
    agent = db.session.get(Agent, request.form.get("agent_id", type=int) or 0)
    if agent is None or not agent.usable_by(current_user):
        abort(404)
    conversation = turns.start_conversation(current_user, agent)
    db.session.commit()
    return redirect(url_for("chat.show", conversation_id=conversation.id))


@bp.route("/<int:conversation_id>")
def show(conversation_id: int):
    return render_chat(get_own_conversation(conversation_id))


@bp.route("/<int:conversation_id>/earlier")
def earlier(conversation_id: int):
    """The messages before a given one, for "Show earlier messages" at the top of the transcript."""
    conversation = get_own_conversation(conversation_id)
    before = request.args.get("before", type=int)
    if before is None:
        abort(400, "Say which message to read before (?before=<message id>).")
    page = conversations.transcript_page(conversation, before, current_app.config["TRANSCRIPT_PAGE_SIZE"])
    return render_template("chat/_transcript_page.html", conversation=conversation, page=page)


@bp.route("/<int:conversation_id>/messages", methods=["POST"])
def send(conversation_id: int):
    conversation = get_own_conversation(conversation_id, *turns.FOR_TURN)
    if current_user.role == "guest":  # guests read; they start and continue no chat (see create)
        abort(403)
    text = (request.form.get("text") or "").strip()
    error = turns.message_error(text)
    if error is not None:
        return _refuse(conversation, text, error)
    if conversation.agent is None or not conversation.agent.usable_by(current_user):
        return _refuse(conversation, text, "You can no longer use this agent.")
    command = parse_command(text)
    if command is not None:
        config = compaction_config(conversation.agent)
        if config is None or not config.allow_compact:
            return _refuse(conversation, text, "This agent does not allow /compact.")
        if turns.active_run(conversation) is not None:
            return _refuse(conversation, text, turns.WAIT)
        return _compact(conversation, text, command)
    try:
        context = parse_context_text(request.form.get("context"), current_user.role)
    except ContextRejected as rejected:
        return _refuse(conversation, text, str(rejected))
    try:  # the database refuses a second run while one is under way (two sends at once included)
        message, run = turns.send_message(conversation, current_user, text, extras=context.as_extras() or None)
    except turns.RunInProgress:
        return _refuse(conversation, text, turns.WAIT)
    except turns.TooManyRuns as refused:  # the text stays in the composer, the error beside it
        return _refuse(conversation, text, str(refused), 429, {"Retry-After": str(refused.retry_after)})
    if is_htmx():
        return render_template("chat/_sent.html", conversation=conversation, message=message, run=run)
    return redirect(url_for("chat.show", conversation_id=conversation.id))


def _refuse(conversation: Conversation, text: str, error: str, status: int = 422, headers: dict | None = None):
    """Answer a message that cannot be sent: the composer with the error beside it, the text kept."""
    if is_htmx():
        return retarget(render_template("chat/_composer.html", conversation=conversation, text=text, error=error),
                        "#composer"), status, headers or {}
    flash(error, "error")
    return redirect(url_for("chat.show", conversation_id=conversation.id))


def _compact(conversation, text: str, instructions: str):
    """Shorten what the model is given, now, steered by the user's instructions; no model turn."""
    message = Message(conversation_id=conversation.id, role="user", content=text)
    db.session.add(message)
    db.session.commit()
    result = compact_stored_context(conversation, "command", instructions or None, force=True)
    notices = db.session.scalars(db.select(Message).where(
        Message.conversation_id == conversation.id, Message.id > message.id).order_by(Message.id)).all()
    if not is_htmx():
        if not notices:
            flash(_compact_summary(result))
        return redirect(url_for("chat.show", conversation_id=conversation.id))
    return render_template("chat/_compacted.html", conversation=conversation, message=message,
                           notices=notices, summary=_compact_summary(result))


def _compact_summary(result) -> str:
    if result is None or not (result.changed or result.failed):
        return "Nothing needed shortening yet."
    return result.notice()


@bp.route("/<int:conversation_id>/rename", methods=["POST"])
def rename(conversation_id: int):
    conversation = get_own_conversation(conversation_id)
    title = " ".join((request.form.get("title") or "").split())
    message = "Give the chat a title." if not title else \
        f"Use at most {TITLE_MAX} characters." if len(title) > TITLE_MAX else bidi_problem(title)
    if message:
        if is_htmx():
            return retarget(render_template("chat/_rename.html", conversation=conversation, error=message,
                                            title=title), "#rename-form"), 422
        flash(message, "error")
        return redirect(url_for("chat.show", conversation_id=conversation.id))
    conversation.title = title
    db.session.commit()
    if is_htmx():
        return render_template("chat/_title.html", conversation=conversation, oob=True)
    return redirect(url_for("chat.show", conversation_id=conversation.id))


@bp.route("/<int:conversation_id>/preferences", methods=["POST"])
def accept_preference(conversation_id: int):
    """Accept a proposed preference without JavaScript; 303 back to the chat, or 422 with the error on the card.

    It writes only the signed-in user's own preference, checked as PATCH /api/me/preferences checks it.
    """
    conversation = get_own_conversation(conversation_id)
    form = AcceptPreferenceForm()
    error = form.apply(current_user)
    if error is not None:
        db.session.rollback()
        return render_chat(conversation, proposal_errors={form.proposal.data: error}), 422
    db.session.commit()
    flash(f"Accepted: your preference {form.namespace.data}.{form.key.data} is saved.")
    back = url_for("chat.show", conversation_id=conversation.id)
    return redirect(f"{back}#proposal-{form.proposal.data}" if form.proposal.data else back, 303)


@bp.route("/<int:conversation_id>/title")
def title(conversation_id: int):
    """Poll for a generated title; swaps the sidebar item and the heading once it exists."""
    conversation = get_own_conversation(conversation_id)
    tries = request.args.get("tries", 0, type=int)
    return render_template("chat/_title_poll.html", conversation=conversation, tries=tries)


NOTICE_LOOKS = 8  # about 19 s in all, as the title's: an after-reply compaction is one summary request


@bp.route("/<int:conversation_id>/after/<int:message_id>/notices")
def notices_after(conversation_id: int, message_id: int):
    """Poll for the notices a job added after an answer (the compaction after a reply), to place after it.

    Only job notices (no run; what a run stores comes with its stream, a command's with its answer).
    """
    conversation = get_own_conversation(conversation_id)
    tries = request.args.get("tries", 0, type=int)
    # Those between this answer and the next message: a later answer's job notice is that answer's.
    following = db.session.scalar(db.select(db.func.min(Message.id)).where(
        Message.conversation_id == conversation.id, Message.id > message_id, Message.role != "notice"))
    between = db.select(Message).where(Message.conversation_id == conversation.id, Message.role == "notice",
                                       Message.run_id.is_(None), Message.id > message_id)
    if following is not None:
        between = between.where(Message.id < following)
    notices = [notice for notice in db.session.scalars(between.order_by(Message.id))
               if (notice.meta or {}).get("compaction") == "threshold"]
    return render_template("chat/_notices_after.html", conversation=conversation, after=message_id,
                           notices=notices, tries=tries, tries_max=NOTICE_LOOKS)


@bp.route("/<int:conversation_id>/delete", methods=["POST"])
def delete(conversation_id: int):
    conversation = get_own_conversation(conversation_id)
    purge_conversation(conversation)
    db.session.commit()
    flash("Chat deleted.")
    return redirect(url_for("chat.index"))


@bp.route("/<int:conversation_id>/export.<fmt>")
def export(conversation_id: int, fmt: str):
    conversation = get_own_conversation(conversation_id)
    messages = transcript(conversation)
    if fmt == "md":
        body, mimetype = export_markdown(conversation, messages), "text/markdown"
    elif fmt == "json":
        body, mimetype = export_json(conversation, messages), "application/json"
    else:
        abort(404)
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="chat-{conversation.id}.{fmt}"'
    return response

