"""WTForms fields and filters the app's forms share: stripped text, folded words, a bounded number, a chosen id."""

from __future__ import annotations

from wtforms import Field, SelectMultipleField
from wtforms.validators import ValidationError

from app.models import ROLES
from app.models.base import bounded_int
from app.policy.bidi import bidi_problem


def first_errors(form) -> dict[str, str]:
    """Each field's first error, by field name, for a template that shows one message beside each field."""
    return {name: field.errors[0] for name, field in form._fields.items() if field.errors}


def stripped(value) -> str:
    """Strip a value's outer white space (a filter); None is ""."""
    return (value or "").strip()


def words(value) -> str:
    """Fold a one-line value's white space (a filter): "  Ada \t Lovelace " is "Ada Lovelace".

    A bidirectional control is refused: WTForms puts the ValueError beside the field.
    """
    text = " ".join(str(value or "").split())
    if problem := bidi_problem(text):
        raise ValueError(problem)
    return text


class NumberField(Field):
    """A whole or decimal number within bounds; empty is None (or "Required.").

    `message` replaces every problem's own words (the agent editor says "Use a whole number from 1 to 200."
    for all of them); `absent` is the text read when the field is not submitted at all.
    """

    def __init__(self, label=None, validators=None, kind: type = int, low: float = 0, high: float = 0,
                 required: bool = False, message: str | None = None, absent: str = "", **kwargs) -> None:
        super().__init__(label, validators, **kwargs)
        self.kind, self.low, self.high, self.required = kind, low, high, required
        self.message, self.absent = message, absent
        self.problem: str | None = None

    def process_data(self, value) -> None:
        if value is None or isinstance(value, str):
            self._read(value or "")
        else:  # a number given as data (the Workspace tools), judged by the same bounds
            self._read(str(value))

    def process_formdata(self, valuelist) -> None:
        self._read(valuelist[0] if valuelist else self.absent)

    def _read(self, text: str) -> None:
        self.text = text = text.strip()
        self.data, self.problem = None, None
        if not text:
            self.problem = "Required." if self.required else None
        else:
            try:
                self.data = self.kind(text)
            except ValueError:
                self.problem = f"Use a {'whole ' if self.kind is int else ''}number."
            else:
                if not self.low <= self.data <= self.high:
                    self.problem = f"Use a value from {self.low:g} to {self.high:g}."
        if self.problem and self.message:
            self.problem = self.message

    def _value(self) -> str:
        return self.text  # what was typed, shown back beside its error

    def pre_validate(self, form) -> None:
        if self.problem:
            raise ValidationError(self.problem)


class ChosenIdField(Field):
    """An optional id chosen from a list: empty, non-numeric or out-of-range text chooses nothing (None)."""

    def process_data(self, value) -> None:
        try:
            self.data = bounded_int(value) or None
        except (TypeError, ValueError):
            self.data = value or None  # given as data: left for the form's validator to refuse

    def process_formdata(self, valuelist) -> None:
        try:
            self.data = bounded_int(valuelist[0]) or None
        except (IndexError, ValueError):
            self.data = None


class RolesField(SelectMultipleField):
    """Role checkboxes (`roles=admin&roles=user`): roles that do not exist are left out, not refused."""

    def __init__(self, label=None, validators=None, **kwargs) -> None:
        kwargs.setdefault("filters", [lambda roles: [role for role in roles or [] if role in ROLES]])
        super().__init__(label, validators, choices=list(ROLES), validate_choice=False, **kwargs)
