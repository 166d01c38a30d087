"""Account forms (Flask-WTF): the same rules for the browser, the CLI and the tests."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, PasswordField, SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Email, EqualTo, Length, ValidationError

from app.database import taken
from app.guards.credentials import MAX_VALUE_CHARS, check_name
from app.models import ROLES, User
from app.policy.bidi import one_line
from app.web.form_fields import stripped

PASSWORD_MIN = 10


def _unique_email(form, field) -> None:
    email = (field.data or "").strip().lower()
    if taken(User.email, email, getattr(form, "user_id", None)):
        raise ValidationError("An account with this e-mail already exists.")


class SignInForm(FlaskForm):
    email = EmailField("E-mail", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=200)])
    remember = BooleanField("Keep me signed in")


class NewUserForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=100), one_line])
    email = EmailField("E-mail", validators=[DataRequired(), Email(check_deliverability=False),
                                             Length(max=254), _unique_email])
    password = PasswordField("Password", validators=[
        DataRequired(), Length(min=PASSWORD_MIN, max=200,
                               message=f"Use between {PASSWORD_MIN} and 200 characters.")])
    role = SelectField("Role", choices=[SelectChoice(r, r.title()) for r in ROLES], default="user")


class SetupForm(NewUserForm):
    confirm = PasswordField("Repeat password",
                            validators=[DataRequired(), EqualTo("password", "The passwords differ.")])


class EditUserForm(FlaskForm):
    role = SelectField("Role", choices=[SelectChoice(r, r.title()) for r in ROLES])
    active = BooleanField("Active")


class PasswordForm(FlaskForm):
    current = PasswordField("Current password", validators=[DataRequired(), Length(max=200)])
    password = PasswordField("New password", validators=[
        DataRequired(), Length(min=PASSWORD_MIN, max=200,
                               message=f"Use between {PASSWORD_MIN} and 200 characters.")])
    confirm = PasswordField("Repeat the new password",
                            validators=[DataRequired(), EqualTo("password", "The passwords differ.")])


class CredentialForm(FlaskForm):
    """A credential to save: its name and its value (the value is never sent back, not even with an error)."""

    name = StringField("Name", filters=[stripped], validators=[one_line])
    value = PasswordField("Value", filters=[stripped])

    def validate_name(self, field) -> None:
        if problem := check_name(field.data):
            raise ValidationError(problem)

    def validate_value(self, field) -> None:
        if not field.data:
            raise ValidationError("Paste the value to save.")
        if len(field.data) > MAX_VALUE_CHARS:
            raise ValidationError(f"Use at most {MAX_VALUE_CHARS:,} characters.")
