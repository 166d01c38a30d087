"""The model configuration form (Flask-WTF): validation with errors beside each field.

The form's numbers keep their own words ("Use a value from 1 to 3600."), and the per-role profiles are
fields named `profile-<role>-<setting>`, added to the class from MODEL_ROLES.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flask_wtf import FlaskForm
from wtforms import BooleanField, SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import ValidationError

from app.database import name_clash
from app.models import ModelConfig
from app.models.agents import MODEL_ROLES, PROVIDERS
from app.web.form_fields import NumberField, first_errors, words

MAX_RETRIES = 5
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
PROFILE_SETTINGS = {"max_tokens": (int, 1, 1_000_000), "temperature": (float, 0, 2), "timeout": (float, 1, 3600)}


def _stripped(value: str | None) -> str | None:
    return (value or "").strip() or None


class _ModelConfigForm(FlaskForm):
    name = StringField("Name", filters=[words])
    provider = SelectField("Provider", choices=[SelectChoice(k, v) for k, v in PROVIDERS.items()],
                           validate_choice=False)
    model_name = StringField("Model", filters=[lambda v: (v or "").strip()])
    base_url = StringField("Base URL", filters=[_stripped])
    api_key_env = StringField("API key variable", filters=[_stripped])
    context_window = NumberField("Context window (tokens)", kind=int, low=512, high=10_000_000, required=True)
    max_tokens = NumberField("Max output tokens", kind=int, low=1, high=1_000_000)
    temperature = NumberField("Temperature", kind=float, low=0, high=2)
    timeout = NumberField("Timeout (seconds)", kind=float, low=1, high=3600, required=True)
    retries = NumberField("Retries", kind=int, low=0, high=MAX_RETRIES)
    is_default = BooleanField("Default for agents that name no model")

    def __init__(self, *args, config_id: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.config_id = config_id

    def validate_name(self, field) -> None:
        if not field.data or len(field.data) > 80:
            raise ValidationError("Give it a name of at most 80 characters.")
        if clash := name_clash(ModelConfig.name, field.data, self.config_id, "configuration"):
            raise ValidationError(clash)

    def validate_provider(self, field) -> None:
        if field.data not in PROVIDERS:
            raise ValidationError("Choose a provider.")

    def validate_model_name(self, field) -> None:
        if self.provider.data == "offline":
            field.data = field.data or "skilldesk-offline"
        elif not field.data:
            raise ValidationError("Name the model, e.g. gpt-4.1-mini or llama3.1:8b.")

    def validate_base_url(self, field) -> None:
        if field.data:
            parts = urlsplit(field.data)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValidationError("Use an http:// or https:// URL, e.g. http://localhost:11434/v1.")
        elif self.provider.data == "openai-compatible":
            raise ValidationError("An OpenAI-compatible server needs its base URL, e.g. http://localhost:11434/v1.")

    def validate_api_key_env(self, field) -> None:
        if field.data and not ENV_NAME.match(field.data):
            raise ValidationError("Write the NAME of an environment variable (A-Z, 0-9, _), not the key itself.")
        if self.provider.data in ("openai", "openai-chat", "anthropic", "groq") and not field.data:
            raise ValidationError("Name the environment variable that holds the API key, e.g. OPENAI_API_KEY.")

    def values(self) -> dict[str, Any]:
        """The configuration's columns as submitted (profiles without empty settings, roles without any)."""
        values = {name: self[name].data for name in ("name", "provider", "model_name", "base_url", "api_key_env",
                                                     "context_window", "max_tokens", "temperature", "timeout",
                                                     "retries", "is_default")}
        values["retries"] = values["retries"] or 0
        profiles: dict[str, dict[str, Any]] = {}
        for role in MODEL_ROLES:
            profile = {key: self[f"profile-{role}-{key}"].data for key in PROFILE_SETTINGS}
            if profile := {k: v for k, v in profile.items() if v is not None}:
                profiles[role] = profile
        values["profiles"] = profiles
        return values

    def error_map(self) -> dict[str, str]:
        """Each field's first error, by field name, for the template."""
        return first_errors(self)


ModelConfigForm = type("ModelConfigForm", (_ModelConfigForm,), {
    f"profile-{role}-{key}": NumberField(f"{role} {key}", kind=kind, low=low, high=high)
    for role in MODEL_ROLES for key, (kind, low, high) in PROFILE_SETTINGS.items()
})


def read_model_form(config_id: int | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Read and validate the submitted model configuration: its values and the errors beside the fields."""
    form = ModelConfigForm(config_id=config_id)
    form.validate()
    return form.values(), form.error_map()
