"""The admin form of a trigger: what starts it, which agent runs as whom, and the prompt template."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask_wtf import FlaskForm
from wtforms import BooleanField, SelectField, SelectMultipleField, StringField, TextAreaField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Optional
from wtforms.widgets import CheckboxInput, ListWidget, NumberInput

from app.models.approvals import TIMEOUT_CHOICES
from app.models.base import bounded_int
from app.policy.bidi import one_line
from app.runtime.prompts import check_prompt
from app.tables.events import ACTIONS
from app.tables.forms import add_error
from app.triggers.schedules import check_cron
from app.web.form_fields import NumberField

KIND_CHOICES = [SelectChoice("event", "A table event"),
                SelectChoice("webhook", "A webhook (POST with a JSON body)"),
                SelectChoice("schedule", "A schedule (cron, UTC)")]


TIMEOUT_LABELS = {"deny": "Deny the call (the agent is told and goes on)",
                  "fail": "Fail the run",
                  "continue": "Continue without the tool (the agent is told to do without it)"}


def notify_url_problem(url: str) -> str | None:
    """Say what is wrong with a notification webhook's address, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "Give an http:// or https:// address."
    return None


class CheckboxesField(SelectMultipleField):
    widget = ListWidget(prefix_label=False)
    option_widget = CheckboxInput()


class TriggerForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=80), one_line])
    kind = SelectField("Starts on", choices=KIND_CHOICES, default="event")
    active = BooleanField("Active", default=True)
    table_id = SelectField("Table", coerce=bounded_int, validate_choice=False)
    events = CheckboxesField("Events", choices=[SelectChoice(a, a.title()) for a in ACTIONS],
                             default=["insert"], validate_choice=True)
    cron = StringField("Schedule", validators=[Optional(), Length(max=100)],
                       description="Cron, five fields, UTC: “*/15 * * * *” every quarter hour, “0 8 * * 1-5” "
                                   "8:00 on weekdays.")
    agent_id = SelectField("Agent", coerce=bounded_int, validate_choice=True)
    run_as_id = SelectField("Runs as", coerce=bounded_int, validate_choice=True,
                            description="The agent acts with this user's permissions; the run is theirs.")
    prompt = TextAreaField("Prompt", validators=[DataRequired(), Length(max=20_000)],
                           description="Jinja, in a sandbox. Table events: {{ row.<field> }}, "
                                       "{{ old.<field> }}, {{ event }}, {{ table.label }}. Webhooks: "
                                       "{{ body.<key> }}. Always: {{ now }}, {{ today }}, "
                                       "{{ trigger.name }}.")
    write_back_field = StringField("Write the conversation id to field",
                                   validators=[Optional(), Length(max=40)],
                                   description="Optional, table events: an integer or text field of the row.")

    # Runs that wait for people: who else decides, how long a call waits, what applies then, who is told.
    owner_id = SelectField("Owner", coerce=bounded_int, validate_choice=True, default=0,
                           description="Decides on the calls its runs leave waiting (in their Approvals inbox), "
                                       "besides the user it runs as and the agent's approvers.")
    decision_timeout_minutes = NumberField("Decision timeout (minutes)", kind=int, low=1, high=43_200,
                                           widget=NumberInput(min=1, max=43_200),
                                           description="How long a call waits for a decision; empty: the site's "
                                                       "default (DECISION_TIMEOUT_MINUTES, 24 h).")
    on_timeout = SelectField("When no decision comes in time",
                             choices=[SelectChoice(choice, TIMEOUT_LABELS[choice]) for choice in TIMEOUT_CHOICES],
                             default="deny")
    notify_url = StringField("Notification webhook", validators=[Optional(), Length(max=500)],
                             description="Optional: this address gets a POST (JSON, through the outbound guard) "
                                         "when one of its runs starts waiting.")
    notify_arguments = BooleanField("Notifications carry the tools' arguments", default=False,
                                    description="Off: the webhook and the e-mails name the tools, never what "
                                                "they were called with.")

    def check(self, table) -> bool:
        """Validate, then apply the rules that depend on the kind; errors go beside the fields."""
        ok = self.validate()  # views call this on POST only; tools have no request
        problem = check_prompt(self.prompt.data or "")
        if problem:
            add_error(self.prompt, problem)
        if self.kind.data == "event":
            if table is None:
                add_error(self.table_id, "Choose the table whose events start the agent.")
            if not self.events.data:
                add_error(self.events, "Choose at least one event.")
        if self.kind.data == "schedule":
            problem = check_cron(self.cron.data or "")
            if problem:
                add_error(self.cron, problem)
        if self.notify_url.data and (problem := notify_url_problem(self.notify_url.data.strip())):
            add_error(self.notify_url, problem)
        if self.write_back_field.data:
            field = table.field(self.write_back_field.data) if table is not None else None
            if self.kind.data != "event" or field is None or field.kind not in ("integer", "text"):
                add_error(self.write_back_field, "Name an integer or text field of the trigger's table.")
        return ok and not any(f.errors for f in self)
