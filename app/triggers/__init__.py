"""Triggers: run an agent unattended, as a configured user, on a table event, a webhook or a schedule.

The prompt is a sandboxed Jinja template over the row's or the body's fields. Each firing makes
a conversation and a queued run with the filled prompt, then a background job runs it on the same
runtime as a chat turn, so the run is listed at /runs with its status, timing, transcript and error.
"""

from __future__ import annotations

from flask import Flask

from app.tables import events
from app.triggers.dispatch import on_table_event


def init_app(app: Flask) -> None:
    """Listen to table events in this app."""
    events.subscribe(app, on_table_event)
