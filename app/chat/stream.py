"""Encode stored run events for the browser: HTML fragments for the htmx view."""

from __future__ import annotations

from flask import render_template
from markupsafe import escape

from app.extensions import db
from app.models import Conversation, Message, Run, RunEvent
from app.runtime.events import HEADER, NOTICE, WRITING, StoredEvent

PANEL_SOURCES = ("panel", "data")  # conversations started in the Workspace or a data page's assistant panel


def sse(event_id: int, event: str, data: str) -> str:
    """Frame one server-sent event (LF line endings; one data line per line of payload)."""
    lines = "".join(f"data: {line}\n" for line in (data.splitlines() or [""]))
    return f"id: {event_id}\nevent: {event}\n{lines}\n"


def encode_html(event: RunEvent | StoredEvent, run_id: str) -> str:
    """Render one run event as the HTML fragment its sse-swap target expects."""
    data = event.data or {}
    if event.type == "text":
        return f"<span>{escape(data.get('delta', ''))}</span>"
    if event.type in ("tool_call", "tool_result"):
        step = {"id": data.get("id"), "name": data.get("name"), "args": data.get("args"),
                "result": data.get("result"), "failed": data.get("failed", False)}
        return render_template("chat/_step.html", step=step, run_id=run_id,
                               oob=event.type == "tool_result", live=True)
    if event.type == "end":
        row = db.session.execute(
            db.select(Message, Conversation).join(Conversation, Conversation.id == Message.conversation_id)
            .where(Message.id == data.get("message_id"))).first() if data.get("message_id") else None
        if row is None:
            return f'<div class="alert error">{escape(data.get("error") or "The run ended.")}</div>'
        message, conversation = row
        # A panel's page has no chat title or sidebar to update (htmx logged a missing target for each).
        title_pending = data.get("title_pending", True) and conversation.source not in PANEL_SOURCES
        return render_template("chat/_message.html", message=message, conversation=conversation, ended=True,
                               title_pending=title_pending, notices_pending=data.get("notices_pending", False))
    if event.type == NOTICE:
        notice = db.session.get(Message, data.get("message_id") or 0)
        return render_template("chat/_live_notice.html", message=notice, run_id=run_id) if notice else ""
    if event.type == WRITING:
        return "Writing the answer…"
    if event.type == HEADER:
        run = db.session.get(Run, run_id)
        return render_template("chat/_live_header.html", conversation=run.conversation) if run else ""
    return f"<span hidden>{escape(event.type)}</span>"
