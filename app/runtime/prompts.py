"""The one sandboxed Jinja environment of every template a user writes: agent instructions, trigger and
preload prompts, the action skill's prompt. The clock's variables (`now`, `today`) are built here once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from jinja2 import ChainableUndefined, Template, TemplateError
from jinja2.sandbox import SandboxedEnvironment

# A missing variable or field renders as nothing, so one webhook body without an optional key still runs.
_templates = SandboxedEnvironment(autoescape=False, undefined=ChainableUndefined)

PROMPT_MAX_CHARS = 20_000


@lru_cache(maxsize=256)
def compiled(template: str) -> Template:
    """Return the template compiled in the sandbox (cached: an agent's instructions render on every turn)."""
    return _templates.from_string(template)


def render(template: str, variables: dict[str, Any]) -> str:
    """Fill a template in the sandbox; raise jinja2.TemplateError when it cannot be rendered."""
    return compiled(template).render(variables)


def render_prompt(template: str, variables: dict[str, Any]) -> str:
    """Fill a prompt template, stripped and clipped to PROMPT_MAX_CHARS; raise jinja2.TemplateError on a bad one."""
    return render(template, variables).strip()[:PROMPT_MAX_CHARS]


def template_error(template: str) -> str | None:
    """Return why a template does not parse ("Template error: …"), or None."""
    try:
        _templates.parse(template)
    except TemplateError as error:
        return f"Template error: {error}"
    return None


def check_prompt(template: str) -> str | None:
    """Return why a prompt template is not valid, or None."""
    if not template.strip():
        return "Write the prompt the agent is given."
    return template_error(template)


def clock_variables(now: datetime | None = None) -> dict[str, str]:
    """Return the variables every template may use: now and today (UTC)."""
    now = now or datetime.now(UTC)
    return {"now": now.strftime("%Y-%m-%d %H:%M UTC"), "today": now.date().isoformat()}
