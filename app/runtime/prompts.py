"""Prompt templates of triggers: Jinja in a sandbox, over the row's, the body's or the clock's variables."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jinja2 import ChainableUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

# A missing field renders as nothing, so one webhook body without an optional key still runs.
_templates = SandboxedEnvironment(autoescape=False, undefined=ChainableUndefined)

PROMPT_MAX_CHARS = 20_000


def render_prompt(template: str, variables: dict[str, Any]) -> str:
    """Fill a prompt template; raise jinja2.TemplateError when it cannot be rendered."""
    text = _templates.from_string(template).render(variables).strip()
    return text[:PROMPT_MAX_CHARS]


def check_prompt(template: str) -> str | None:
    """Return why a prompt template is not valid, or None."""
    if not template.strip():
        return "Write the prompt the agent is given."
    try:
        _templates.parse(template)
    except TemplateError as error:
        return f"Template error: {error}"
    return None


def clock_variables(now: datetime | None = None) -> dict[str, str]:
    """Return the variables every prompt may use: now and today (UTC)."""
    now = now or datetime.now(UTC)
    return {"now": now.strftime("%Y-%m-%d %H:%M UTC"), "today": now.date().isoformat()}
