"""Admin forms for tables and fields (Flask-WTF); schema rules themselves live in tables/schema.py."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from wtforms import BooleanField, SelectField, StringField, TextAreaField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Optional

from app.models.base import bounded_int
from app.policy.bidi import one_line
from app.tables.fields import KINDS


def add_error(field, message: str) -> None:
    """Put a message beside a form field."""
    field.errors = [*field.errors, message]


class TableForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=40), one_line],
                       description="Lower-case letters, digits and underscores; used in addresses and by "
                                   "agents.")
    label = StringField("Label", validators=[DataRequired(), Length(max=80), one_line])
    description = StringField("Description", validators=[Optional(), Length(max=300)])


class TableSettingsForm(FlaskForm):
    label = StringField("Label", validators=[DataRequired(), Length(max=80), one_line])
    description = StringField("Description", validators=[Optional(), Length(max=300)])
    assistant_agent_id = SelectField("Assistant on its pages", coerce=bounded_int, validate_choice=True,
                                     description="The agent people chat with on this table's list and "
                                                 "record pages.")


class FieldForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=40), one_line])
    label = StringField("Label", validators=[DataRequired(), Length(max=80), one_line])
    kind = SelectField("Kind", choices=[SelectChoice(k, v) for k, v in KINDS.items()], default="text")
    required = BooleanField("Required")
    choices = TextAreaField("Choices", validators=[Optional(), Length(max=5_000)],
                            description="For a choice field: one choice per line.")
    link_table = SelectField("Links to", coerce=bounded_int, validate_choice=False,
                             description="For a link field: the table whose records it points to.")


class ChangeFieldForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=40), one_line])
    label = StringField("Label", validators=[DataRequired(), Length(max=80), one_line])
    required = BooleanField("Required")
    choices = TextAreaField("Choices", validators=[Optional(), Length(max=5_000)])


class UploadForm(FlaskForm):
    file = FileField("CSV file", validators=[FileRequired("Choose a CSV file.")],
                     description="UTF-8, with a header row. Comma, semicolon or tab separated.")
