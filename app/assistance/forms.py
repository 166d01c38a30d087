"""The forms of the assistance area: the admin's assistant switch, a user's API tokens, accepting a proposal."""

from __future__ import annotations

from typing import Any

from flask_wtf import FlaskForm
from wtforms import BooleanField, HiddenField, SelectField, SelectMultipleField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Optional, Regexp, ValidationError
from wtforms.widgets import CheckboxInput, ListWidget

from app.assistance.preferences import PreferenceError, update_preferences
from app.models import User
from app.models.tokens import EXPIRY_DAYS, MAX_RATE_LIMIT
from app.policy.bidi import one_line
from app.policy.schema_subset import InvalidJSON, loads_json
from app.web.form_fields import NumberField


class AssistantSettingsForm(FlaskForm):
    enabled = BooleanField("The assistant is on",
                           description="Off: every chat, stream and assistant endpoint answers "
                                       "“feature disabled” (403) until it is switched back on.")


class ApiTokenForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=80), one_line],
                       description="What the token is for, e.g. “laptop script”.")
    scopes = SelectMultipleField(
        "Scopes", default=["read"], widget=ListWidget(prefix_label=False), option_widget=CheckboxInput(),
        choices=[SelectChoice("read", "Read: the JSON API's GETs (conversations, preferences)"),
                 SelectChoice("chat", "Chat: also send messages and change things through the JSON API"),
                 SelectChoice("openai", "OpenAI-compatible API (/v1/): agents as models"),
                 SelectChoice("mcp", "MCP: each agent's MCP server (/mcp/<agent>)")],
        validators=[DataRequired(message="Choose at least one scope.")])
    agents = SelectMultipleField("Agents", coerce=int, widget=ListWidget(prefix_label=False),
                                 option_widget=CheckboxInput(),
                                 description="None ticked: every agent you may use, now and later.")
    days = SelectField("Expires after", coerce=int, default=30,
                       choices=[SelectChoice(days, f"{days} days") for days in EXPIRY_DAYS])
    rate_limit = NumberField("Requests per minute", kind=int, low=1, high=MAX_RATE_LIMIT,
                             message=f"Use a whole number from 1 to {MAX_RATE_LIMIT:,}, or leave it empty.",
                             description="On /v1/ and /mcp/; empty: the site's limit (a higher number cannot lift it).")


class AcceptPreferenceForm(FlaskForm):
    """Accept a proposed preference without JavaScript: the proposal card's Accept as a plain form."""

    proposal = HiddenField(validators=[Optional(), Regexp(r"^[0-9a-f-]{36}$", message="Not a proposal id.")])
    namespace = HiddenField(validators=[DataRequired(), Length(max=32)])
    key = HiddenField(validators=[DataRequired(), Length(max=64)])
    value = HiddenField(validators=[DataRequired(message="Give the value as JSON text.")])

    def validate_value(self, field) -> None:
        try:
            self.parsed: Any = loads_json(field.data)
        except InvalidJSON as error:
            raise ValidationError(f"The value must be JSON text: {error}.") from None

    def apply(self, user: User) -> str | None:
        """Write the user's own preference as PATCH /api/me/preferences does; return what is wrong, or None.

        The caller commits.
        """
        if not self.validate():
            return " ".join(error for errors in self.errors.values() for error in errors)
        try:
            update_preferences(user, {self.namespace.data: {self.key.data: self.parsed}})
        except PreferenceError as error:
            return str(error)
        return None
