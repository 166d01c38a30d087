"""Accounts: creating, editing and deleting users, their sign-in sessions, and the forms for managing them."""

from __future__ import annotations

from flask import Flask

from app.accounts import sessions
from app.extensions import login_manager


def init_app(app: Flask) -> None:
    """Load the signed-in user from their session's token on every request (app/accounts/sessions.py).

    A sign-out, a new password, a changed role or a deactivated account so applies at once; the session
    identifier is the peer's, never an X-Forwarded-For a client could write.
    """
    login_manager.user_loader(sessions.load_user)
    login_manager._session_identifier_generator = sessions.session_identifier
