"""Runs that wait for people: who may decide, the inbox, notifications and timeouts.

The runtime marks a run `waiting` and stores its calls with a deadline (app/runtime/waiting.py); the chat
area answers a call and resumes the run (app/chat/approvals.py). This area decides who may decide
(deciders.py: the inbox at /approvals/ and GET /api/approvals), tells them (notify.py: e-mail, a
trigger's webhook) and applies the timeouts (timeouts.py, every minute). See docs/approvals.md.
"""

from __future__ import annotations

from flask import Flask
from flask_login import current_user

from app.runtime.waiting import on_waiting
from app.waiting import deciders, notify, timeouts  # noqa: F401 (timeouts declares the periodic job)


def init_app(app: Flask) -> None:
    """Tell the people who may decide when a run starts waiting; give templates the inbox's count."""
    on_waiting(app, notify.queue_for_run)

    def inbox_count() -> int:
        return deciders.count_for(current_user) if current_user.is_authenticated else 0

    app.add_template_global(inbox_count)
