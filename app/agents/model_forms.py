"""The model configuration form: validation with errors beside each field."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from app.database import name_clash
from app.models import ModelConfig
from app.models.agents import MODEL_ROLES, PROVIDERS

MAX_RETRIES = 5
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


def _number(form: Any, key: str, kind: type, low: float, high: float, errors: dict, required: bool = False):
    text = (form.get(key) or "").strip()
    if not text:
        if required:
            errors[key] = "Required."
        return None
    try:
        value = kind(text)
    except ValueError:
        errors[key] = f"Use a {'whole ' if kind is int else ''}number."
        return None
    if not low <= value <= high:
        errors[key] = f"Use a value from {low:g} to {high:g}."
    return value


def read_model_form(form: Any, config_id: int | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Read and validate a submitted model configuration."""
    errors: dict[str, str] = {}
    values: dict[str, Any] = {
        "name": " ".join((form.get("name") or "").split()),
        "provider": form.get("provider") or "",
        "model_name": (form.get("model_name") or "").strip(),
        "base_url": (form.get("base_url") or "").strip() or None,
        "api_key_env": (form.get("api_key_env") or "").strip() or None,
        "is_default": form.get("is_default") is not None,
    }
    if not values["name"] or len(values["name"]) > 80:
        errors["name"] = "Give it a name of at most 80 characters."
    elif clash := name_clash(ModelConfig.name, values["name"], config_id, "configuration"):
        errors["name"] = clash
    if values["provider"] not in PROVIDERS:
        errors["provider"] = "Choose a provider."
    if not values["model_name"] and values["provider"] != "offline":
        errors["model_name"] = "Name the model, e.g. gpt-4.1-mini or llama3.1:8b."
    if values["provider"] == "offline":
        values["model_name"] = values["model_name"] or "skilldesk-offline"
    if values["base_url"]:
        parts = urlsplit(values["base_url"])
        if parts.scheme not in ("http", "https") or not parts.netloc:
            errors["base_url"] = "Use an http:// or https:// URL, e.g. http://localhost:11434/v1."
    elif values["provider"] == "openai-compatible":
        errors["base_url"] = "An OpenAI-compatible server needs its base URL, e.g. http://localhost:11434/v1."
    if values["api_key_env"] and not ENV_NAME.match(values["api_key_env"]):
        errors["api_key_env"] = "Write the NAME of an environment variable (A-Z, 0-9, _), not the key itself."
    if values["provider"] in ("openai", "openai-chat", "anthropic", "groq") and not values["api_key_env"]:
        errors["api_key_env"] = "Name the environment variable that holds the API key, e.g. OPENAI_API_KEY."
    values["context_window"] = _number(form, "context_window", int, 512, 10_000_000, errors, required=True)
    values["max_tokens"] = _number(form, "max_tokens", int, 1, 1_000_000, errors)
    values["temperature"] = _number(form, "temperature", float, 0, 2, errors)
    values["timeout"] = _number(form, "timeout", float, 1, 3600, errors, required=True)
    values["retries"] = _number(form, "retries", int, 0, MAX_RETRIES, errors) or 0
    profiles: dict[str, dict[str, Any]] = {}
    for role in MODEL_ROLES:
        role_errors: dict[str, str] = {}
        profile = {
            "max_tokens": _number(form, f"profile-{role}-max_tokens", int, 1, 1_000_000, role_errors),
            "temperature": _number(form, f"profile-{role}-temperature", float, 0, 2, role_errors),
            "timeout": _number(form, f"profile-{role}-timeout", float, 1, 3600, role_errors),
        }
        errors.update(role_errors)
        profile = {k: v for k, v in profile.items() if v is not None}
        if profile:
            profiles[role] = profile
    values["profiles"] = profiles
    return values, errors
