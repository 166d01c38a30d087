"""The forms of the assistance area: the admin's assistant switch, a user's API tokens."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length

from app.api.tokens import EXPIRY_DAYS


class AssistantSettingsForm(FlaskForm):
    enabled = BooleanField("The assistant is on",
                           description="Off: every chat, stream and assistant endpoint answers "
                                       "“feature disabled” (403) until it is switched back on.")


class ApiTokenForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=80)],
                       description="What the token is for, e.g. “laptop script”.")
    scope = SelectField("Scope", choices=[SelectChoice("read", "Read: list and read conversations, preferences"),
                                          SelectChoice("chat", "Read and chat: also send messages, change things")],
                        default="read")
    days = SelectField("Expires after", coerce=int, default=30,
                       choices=[SelectChoice(days, f"{days} days") for days in EXPIRY_DAYS])
