"""Runs that wait for people: who may decide, the inbox, notifications and timeouts.

The runtime marks a run `waiting` and stores its calls with a deadline (app/runtime/waiting.py); the chat
area answers a call and resumes the run (app/chat/approvals.py). This area decides who may decide
(deciders.py: the inbox at /approvals/ and GET /api/approvals), tells them (notify.py: e-mail, a
trigger's webhook) and applies the timeouts (timeouts.py, every minute). See docs/approvals.md.
"""

from __future__ import annotations

from flask import Flask

from app.runtime.waiting import on_waiting
from app.waiting import deciders, notify, timeouts  # noqa: F401 (timeouts declares the periodic job)


def init_app(app: Flask) -> None:
    """Tell the people who may decide when a run starts waiting."""
    on_waiting(app, notify.queue_for_run)
