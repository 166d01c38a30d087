"""The share dialog's form (Flask-WTF): who may open the link, the people named, when it expires."""

from __future__ import annotations

from datetime import datetime, timedelta

from flask import current_app
from flask_wtf import FlaskForm
from wtforms import RadioField, StringField
from wtforms.validators import Length, ValidationError

from app.extensions import db
from app.models import User
from app.models.base import utcnow
from app.models.shares import AUDIENCES

MAX_EXPIRY_DAYS = 365


def audiences() -> dict[str, str]:
    """Who a link may be for here: public links only where an admin allowed them."""
    allowed = dict(AUDIENCES)
    if not current_app.config["ALLOW_PUBLIC_LINKS"]:
        allowed.pop("public")
    return allowed


class ShareForm(FlaskForm):
    audience = RadioField("Who may open the link", default="instance", validate_choice=False)
    emails = StringField("People (e-mails, comma-separated — for “Only the people I name”)",
                         validators=[Length(max=2000)])
    expires_days = StringField("Expires after (days, optional)")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.audience.choices = list(audiences().items())
        self.people: list[User] = []
        self.expires_at: datetime | None = None

    def validate_audience(self, field) -> None:
        if field.data not in audiences():
            raise ValidationError("Choose who may open the link.")

    def validate_emails(self, field) -> None:
        if self.audience.data != "users":
            return
        emails = [e.strip().lower() for e in (field.data or "").replace(";", ",").split(",") if e.strip()]
        if not emails:
            raise ValidationError("Name at least one person by e-mail.")
        for email in emails:
            person = db.session.scalar(db.select(User).where(User.email == email, User.active.is_(True)))
            if person is None:
                raise ValidationError(f"No active account has the e-mail {email}.")
            self.people.append(person)

    def validate_expires_days(self, field) -> None:
        days = (field.data or "").strip()
        if not days:
            return
        if not days.isdigit() or not 1 <= int(days) <= MAX_EXPIRY_DAYS:
            raise ValidationError(f"Use a whole number of days from 1 to {MAX_EXPIRY_DAYS}, or leave it empty.")
        self.expires_at = utcnow() + timedelta(days=int(days))
