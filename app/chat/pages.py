"""The chat page as the chat and model-picker views render it: the transcript's latest page, the run, the sidebar."""

from __future__ import annotations

from flask import current_app, render_template
from flask_login import current_user

from app.chat import conversations, turns
from app.models import Conversation


def sidebar_page(page: int = 1, search: str = "") -> conversations.SidebarPage:
    """Return a page of the signed-in user's sidebar."""
    return conversations.sidebar_page(current_user.id, search, page, current_app.config["SIDEBAR_PAGE_SIZE"])


def render_chat(conversation: Conversation, **context) -> str:
    """Render a conversation's page: its latest messages (older ones load on demand), its run, the sidebar."""
    run = turns.active_run(conversation)
    page = conversations.transcript_page(conversation, size=current_app.config["TRANSCRIPT_PAGE_SIZE"],
                                         streaming_run=run.id if run else None)
    return render_template("chat/show.html", conversation=conversation, page=page, run=run,
                           sidebar=sidebar_page(), search="", **context)
