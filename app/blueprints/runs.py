"""Runs: the event stream of a run (SSE), Stop, and the admins' list of runs."""

from __future__ import annotations

import time

from flask import Blueprint, Response, abort, current_app, render_template, request, stream_with_context
from flask_login import current_user
from sqlalchemy.orm import contains_eager

from app.accounts import sessions
from app.chat.stream import encode_html, sse
from app.extensions import db
from app.models import Conversation, Message, Run, User, UserSession
from app.models.chat import ACTIVE_STATUSES, RUN_STATUSES, WAITING_FOR
from app.runtime import capacity, execution
from app.runtime import events as run_events
from app.triggers import history
from app.web.security import admin_required
from app.web.stream_client import StreamClient

bp = Blueprint("runs", __name__)

POLL_SECONDS = 1.0


def get_own_run(run_id: str) -> Run:
    """Return the signed-in user's run, or 404 (the same answer for someone else's)."""
    run = db.session.scalar(db.select(Run).join(Run.conversation).options(contains_eager(Run.conversation))
                            .where(Run.id == run_id, Run.user_id == current_user.id,
                                   Conversation.deleted_at.is_(None)))
    if run is None:
        abort(404)
    return run


@bp.route("/")
@admin_required
def index():
    """The admins' list of unattended runs: status, timing, the filled prompt, the transcript, the error."""
    status, waiting_for = request.args.get("status"), request.args.get("waiting_for")
    page = db.paginate(history.unattended_runs(status, request.args.get("run"), waiting_for),
                       per_page=history.PER_PAGE, error_out=False)
    return render_template("runs/index.html", page=page, status=status, statuses=RUN_STATUSES,
                           waiting_for=waiting_for, waiting_kinds=WAITING_FOR,
                           failed_notifications=history.failed_notifications(), **history.run_details(page.items))


@bp.route("/<run_id>/events")
def events(run_id: str):
    run = get_own_run(run_id)
    # The browser resends Last-Event-ID on reconnect; ?after= is for clients that cannot set headers.
    after = request.headers.get("Last-Event-ID", type=int) or request.args.get("after", 0, type=int) or 0
    app = current_app._get_current_object()
    release = capacity.take_stream(app)  # 503 with Retry-After when this process streams all it can
    session_token = getattr(current_user, "session_token", None)  # signing out ends the stream too
    follow = _follow(app, run.id, (current_user.id, session_token), after, StreamClient(), release)
    response = Response(stream_with_context(follow), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.call_on_close(release)  # also when the stream never started
    return response


def _follow(app, run_id: str, viewer: tuple[int, str | None], after: int, client: StreamClient | None = None,
            release=None):
    """Replay stored events after `after`, then follow live ones until the run ends.

    No database connection is held while the client reads or while the follower waits: each read
    is a short session, released before any yield or wait (a stream costs a thread, never a pool slot).
    A client that went away is noticed between two waits (its socket, or a heartbeat's write: see
    app/web/stream_client.py), so its thread and stream slot come back within a recheck interval or a
    heartbeat, not when the run ends.
    """
    try:
        yield from _follow_events(app, run_id, viewer, after, client)
    finally:
        if release is not None:
            release()


def _follow_events(app, run_id: str, viewer: tuple[int, str | None], after: int, client: StreamClient | None):
    checked = time.monotonic()  # the request checked access a moment ago
    ended = sent = False
    with run_events.follow(app, run_id, after) as follower:
        while True:
            # From memory when this process stored them, else one read of the database.
            stored = follower.next(0 if ended else POLL_SECONDS)
            frames = [(event.type, sse(event.seq, event.type, encode_html(event, run_id))) for event in stored]
            db.session.remove()  # release the connection before the client reads (or the follower waits)
            for type_, frame in frames:
                yield frame
                sent = True
                if client is not None:
                    client.wrote()
                if type_ == run_events.END:
                    return
            if ended:  # read after the run had ended: nothing more will come (a client past its end event)
                return
            if stored and time.monotonic() - checked < POLL_SECONDS:
                continue  # events flow: access is re-checked once a second
            allowed, ended = _state(run_id, viewer)
            db.session.remove()
            checked = time.monotonic()
            if not allowed:
                return
            if ended:  # read once more: the end event was committed with the status
                follower.look_again()
                continue
            if client is not None and client.gone():
                return
            if not sent:  # answer at once, so the client (and the server) knows the stream is open
                yield ": waiting\n\n"
                sent = True
            if client is not None and (beat := client.heartbeat()):
                yield beat


def _state(run_id: str, viewer: tuple[int, str | None]) -> tuple[bool, bool]:
    """Return (the user may still follow the run, the run has ended), in one indexed query."""
    # A deleted account, a deactivated one, an ended session or a deleted conversation ends the stream too.
    user_id, session_token = viewer
    query = (db.select(User.active, Conversation.deleted_at, Run.status).join(Run, Run.user_id == User.id)
             .join(Conversation, Conversation.id == Run.conversation_id)
             .where(Run.id == run_id, User.id == user_id))
    if session_token is not None:
        query = query.join(UserSession, sessions.live_session(session_token))
    row = db.session.execute(query).first()
    if row is None or not row.active or row.deleted_at is not None:
        return False, True
    return True, row.status not in ACTIVE_STATUSES


@bp.route("/<run_id>/stop", methods=["POST"])
def stop(run_id: str):
    run = get_own_run(run_id)
    if run.active:
        execution.request_stop(run)
    return Response(status=204)


@bp.route("/<run_id>/message")
def message(run_id: str):
    """The assistant message a run produced (for clients that missed the end of the stream)."""
    run = get_own_run(run_id)
    found = db.session.scalar(db.select(Message).where(Message.run_id == run.id, Message.role == "assistant"))
    if found is None:
        abort(404)
    return render_template("chat/_message.html", message=found, conversation=run.conversation)
