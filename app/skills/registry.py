"""The skills registry: a dict filled from the built-ins and the `skilldesk.skills` entry points."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from flask import Flask, current_app
from pydantic import BaseModel
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, FunctionToolset, PrefixedToolset, WrapperToolset

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "skilldesk.skills"

# Built-in skills are modules exposing `skill`, loaded exactly like third-party ones.
BUILTINS: tuple[str, ...] = (
    "app.skills.clock",
    "app.skills.subagent",
    "app.skills.mcp",
    "app.skills.model_picker",
    "app.skills.actions",
    "app.skills.plan_approval",
    "app.skills.ask_user",
    "app.skills.tool_approval",
    "app.skills.memory",
    "app.skills.web_search",
    "app.skills.http_request",
    "app.skills.javascript",
    "app.skills.generated_code",
    "app.skills.table",
    "app.skills.preload_data",
    "app.skills.compaction",
    "app.skills.ui_proposals",
)

Built = AbstractCapability[Any] | AbstractToolset[Any]


@dataclass
class SkillContext:
    """What a skill may know while it builds: who is asking, for which agent, conversation and run.

    Tools run outside the request; those that touch the database open their own
    `with ctx.app_context():` so that no session is shared between threads.
    """

    app: Flask
    user_id: int | None
    agent_id: int | None
    conversation_id: int | None = None
    run_id: str | None = None
    role: str = "user"
    user_name: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    # Stores a run event for the page to show at once (`NOTICE` with a message id, `HEADER`), see
    # app/stream.py. None outside a run (the editor's preview).
    announce: Callable[[str, dict[str, Any]], None] | None = None

    def tell_page(self, type_: str, data: dict[str, Any]) -> None:
        """Show a change this tool made (a notice, the header) on the chat page now, through the run's stream."""
        if self.announce is not None:
            self.announce(type_, data)

    @contextmanager
    def app_context(self) -> Iterator[None]:
        """Push a fresh app context (and so a fresh database session) for a tool call."""
        with self.app.app_context():
            yield


@dataclass(frozen=True)
class Skill:
    name: str
    title: str
    config: type[BaseModel]
    build: Callable[[Any, SkillContext], Built | Sequence[Built] | None]
    description: str = ""
    # Set for skills that change the chat rather than give tools (e.g. the model picker).
    gives_tools: bool = True
    # For skills whose tools are known only once connected (an MCP server): the names the settings are
    # sure to give, without building. Other skills' names are read from the toolsets they build.
    declared_tools: Callable[[Any], Iterable[str]] | None = None

    def parse(self, settings: dict[str, Any] | None) -> BaseModel:
        """Validate stored or submitted settings with the skill's Config."""
        return self.config.model_validate(settings or {})

    def built(self, settings: dict[str, Any] | None, ctx: SkillContext) -> list[Built]:
        """Build the skill's capabilities and toolsets as a list."""
        result = self.build(self.parse(settings), ctx)
        if result is None:
            return []
        if isinstance(result, AbstractCapability | AbstractToolset):
            return [result]
        return list(result)

    def tool_names(self, settings: dict[str, Any] | None, ctx: SkillContext) -> frozenset[str]:
        """Return the names of the tools these settings give that are known before a run."""
        if self.declared_tools is not None:
            return frozenset(self.declared_tools(self.parse(settings)))
        return frozenset(name for item in self.built(settings, ctx) for name in _tool_names(item))


def _tool_names(item: Built | None) -> list[str]:
    """Read the tool names a toolset (or a capability's toolset) defines, without running it."""
    if isinstance(item, AbstractCapability):
        return _tool_names(item.get_toolset())
    if isinstance(item, FunctionToolset):
        return list(item.tools)
    if isinstance(item, CombinedToolset):
        return [name for toolset in item.toolsets for name in _tool_names(toolset)]
    if isinstance(item, PrefixedToolset):
        return [f"{item.prefix}_{name}" for name in _tool_names(item.wrapped)]
    if isinstance(item, WrapperToolset):
        return _tool_names(item.wrapped)
    return []  # a toolset whose tools are listed only at run time (a server's, a function's)


def load_registry() -> dict[str, Skill]:
    """Collect the built-in skills and those of installed packages."""
    found: dict[str, Skill] = {}
    for module_name in BUILTINS:
        _add(found, importlib.import_module(module_name).skill, module_name)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            _add(found, entry.load(), entry.value)
        except Exception:  # a broken plugin must not take the app down
            log.exception("could not load skill plugin %s", entry.value)
    return found


def _add(found: dict[str, Skill], skill: Skill, origin: str) -> None:
    if not isinstance(skill, Skill):
        raise TypeError(f"{origin} does not expose a Skill")
    if skill.name in found:
        raise ValueError(f"two skills are named {skill.name!r} ({origin})")
    found[skill.name] = skill


def init_app(app: Flask) -> None:
    app.extensions["skills"] = load_registry()


def registry() -> dict[str, Skill]:
    """Return the current app's skills by name."""
    return current_app.extensions["skills"]


def get_skill(name: str) -> Skill | None:
    """Return the named skill of the current app, if registered."""
    return registry().get(name)
