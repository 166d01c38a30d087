"""The context a chat message carries: `context.page` = {resource, recordKey, locale, list, dashboard, proposable}.

All of it is untrusted input. The rules, for the htmx chat and the API alike:
- a control-plane key anywhere in the context, at any depth (profile, tools, permissions, roles,
  tenant_id, user_id, system_prompt, also spelled in camelCase or with dashes) is refused
  (ControlPlaneKey, a 422): a client does not choose the agent's setup;
- resource + recordKey are kept only when app/tables/context.py resolves them (a data table and a
  record the user may read); anything else leaves the assistant generic;
- a resolved context sent by the client (`page_context`, or anything else) is ignored: what the
  agent is told is built on the server;
- `list`, `dashboard` and the rest are hints: read by nobody on the server, they change no policy,
  tool or prompt;
- `locale` is kept when it looks like a language tag;
- `proposable` becomes the declared targets (targets.py), each checked and dropped when it fails.

A context nested more than MAX_JSON_DEPTH (64) levels is refused (a 422 beside the composer), as a JSON
body is (a 400): in a form field, Python's json module read ~980 levels before its recursion limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.assistance.targets import Declared, declared_targets
from app.policy.schema_subset import InvalidJSON, compact_json, loads_json, nested_deeper_than, too_deep
from app.tables.context import PageContext, resolve_page_context

CONTROL_PLANE = ("profile", "tools", "permissions", "roles", "tenant_id", "user_id", "system_prompt")
_NORMALIZED = {name.replace("_", "") for name in CONTROL_PLANE}
LOCALE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$")
MAX_CONTEXT_BYTES = 64 * 1024


class ContextRejected(ValueError):
    """A context that is refused as a whole (a 422); `field` says where."""

    def __init__(self, message: str, field: str = "context") -> None:
        super().__init__(message)
        self.field = field


class ControlPlaneKey(ContextRejected):
    """A key that would steer the agent's setup."""


@dataclass(frozen=True)
class MessageContext:
    """What the server keeps of a message's context."""

    page: PageContext | None = None
    locale: str | None = None
    declared: Declared = field(default_factory=Declared)

    def as_extras(self) -> dict[str, Any]:
        """Return what the run keeps with the user's message (written by the server only)."""
        extras = self.page.as_extras() if self.page else {}
        if self.locale:
            extras["locale"] = self.locale
        if self.declared.targets:
            extras["proposable"] = [target.as_json() for target in self.declared.targets]
        return extras


def control_plane_path(value: Any, path: str = "context") -> str | None:
    """Return the path of the first control-plane key anywhere in the value, or None."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                name = f"{where}.{key}"
                if isinstance(key, str) and re.sub(r"[-_\s]", "", key).lower() in _NORMALIZED:
                    return name
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(item))
    return None


def parse_context_text(text: str | None, role: str | None) -> MessageContext:
    """Read a context sent as JSON text (a form field); empty text is no context."""
    if not text or not text.strip():
        return MessageContext()
    if len(text.encode()) > MAX_CONTEXT_BYTES:
        raise ContextRejected(f"The context is over {MAX_CONTEXT_BYTES} bytes.")
    try:
        context = loads_json(text)
    except InvalidJSON as error:
        if "nested" in str(error):  # past the recursion limit
            raise ContextRejected(too_deep("The context")) from None
        raise ContextRejected(f"The context is not valid JSON: {error}.") from None
    return parse_context(context, role)


def parse_context(context: Any, role: str | None) -> MessageContext:
    """Check a message's context and resolve what the server may keep of it for the user's role."""
    if context is None:
        return MessageContext()
    if not isinstance(context, dict):
        raise ContextRejected("The context must be an object.")
    if nested_deeper_than(context):
        raise ContextRejected(too_deep("The context"))
    found = control_plane_path(context)
    if found:
        raise ControlPlaneKey(f"{found} is not allowed in a message's context: a client does not choose "
                              "the agent's profile, tools, permissions or prompt.", found)
    if len(compact_json(context).encode()) > MAX_CONTEXT_BYTES:
        raise ContextRejected(f"The context is over {MAX_CONTEXT_BYTES} bytes.")
    page = context.get("page")
    if page is None:
        return MessageContext()
    if not isinstance(page, dict):
        raise ContextRejected("context.page must be an object.", "context.page")
    locale = page.get("locale")
    return MessageContext(
        page=resolve_page_context(role, page.get("resource"), page.get("recordKey")),
        locale=locale if isinstance(locale, str) and LOCALE.match(locale) else None,
        declared=declared_targets(page.get("proposable"), role),
    )
