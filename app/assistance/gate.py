"""The assistant switch: an admin turns the assistant off, and every assistant route answers 403 FEATURE_DISABLED.

The gate is one `before_request` hook, after the sign-in check: a request that is not signed in
never reaches it and gets its 401 (or the sign-in page), so the gate tells a stranger nothing.
Which routes are assistant routes is said here, in one place:
- every route of the blueprints in GATED_BLUEPRINTS (chats, runs and their streams, cards of calls
  waiting for a decision, the model picker): a route added to them is gated without a word;
- the routes of GATED_ENDPOINTS, which live in other blueprints;
- minus the routes of UNGATED, each with its reason.
tests/assistance/test_gate.py fails when a route that touches conversations, runs or turns is
outside the gate.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, g, request
from flask_login import current_user

from app.extensions import db
from app.models import InstanceSetting
from app.web.errors import render_error
from app.web.json_errors import error_response
from app.web.security import wants_json

ENABLED_KEY = "assistant.enabled"
DISABLED_MESSAGE = "The assistant is switched off on this instance. An administrator can switch it back on."

GATED_BLUEPRINTS = frozenset({"chat", "runs", "approvals", "model_picker", "api_chat", "api_approvals",
                              "assistant_panel"})
GATED_ENDPOINTS = frozenset({
    "data.assistant",  # the data pages' assistant panel
    "shares.dialog", "shares.create",  # sharing a conversation starts from the conversation
})
UNGATED = {
    "approvals.audit": "the admins' audit of past decisions, not a conversation",
    "approvals.count": "a number the navigation polls on every page; it is 0 while the assistant is off",
    "runs.index": "the admins' list of runs, for diagnostics",
    "admin.compactions": "the admins' diagnostics of a conversation's compactions",
    "evals.show": "the admins' evaluation reports: cases ran on disposable databases, no one's conversation",
    "evals.case": "the admins' evaluation reports: cases ran on disposable databases, no one's conversation",
    "evals.export": "the admins' evaluation reports: cases ran on disposable databases, no one's conversation",
}


def is_gated(endpoint: str | None) -> bool:
    """Tell whether an endpoint is an assistant route (behind the switch)."""
    if not endpoint or endpoint in UNGATED:
        return False
    return endpoint in GATED_ENDPOINTS or endpoint.rsplit(".", 1)[0] in GATED_BLUEPRINTS


def assistant_enabled() -> bool:
    """Tell whether the assistant is switched on (it is, until an admin switches it off)."""
    if "assistant_enabled" not in g:
        setting = db.session.get(InstanceSetting, ENABLED_KEY)
        g.assistant_enabled = True if setting is None else bool(setting.value)
    return g.assistant_enabled


def set_assistant_enabled(enabled: bool) -> None:
    """Switch the assistant on or off for the whole instance; the caller commits."""
    setting = db.session.get(InstanceSetting, ENABLED_KEY) or InstanceSetting(key=ENABLED_KEY)
    setting.value = bool(enabled)
    db.session.add(setting)
    g.assistant_enabled = bool(enabled)


def disabled_response() -> Any:
    """Answer an assistant route while the assistant is off: JSON for the API, a page or an alert otherwise."""
    if wants_json():
        return error_response(403, DISABLED_MESSAGE, "FEATURE_DISABLED")
    return render_error(403, DISABLED_MESSAGE)


def _gate() -> Any:
    if not is_gated(request.endpoint) or not current_user.is_authenticated:
        return None
    return None if assistant_enabled() else disabled_response()


def init_app(app: Flask) -> None:
    """Put the gate after the sign-in check (app.web.security registers that first)."""
    app.before_request(_gate)
