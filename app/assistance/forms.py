"""The admin form of the assistant switch."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField


class AssistantSettingsForm(FlaskForm):
    enabled = BooleanField("The assistant is on",
                           description="Off: every chat, stream and assistant endpoint answers "
                                       "“feature disabled” (403) until it is switched back on.")
