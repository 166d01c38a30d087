"""The contract between the runtime and a skill: what a skill is given (`SkillContext`), what it is (`Skill`),
and the hooks through which the runtime asks it at the points of a turn (`pick_model`, `finish_turn`,
`after_turn`, `review_answer`, `answer_meta`), and the metadata a tool declares (what it changes, whether it
destroys, whether its results are trusted). A skill's tools belong to tool groups (`ToolGroup`,
declared with `tool_groups`): the Tool routing skill loads or defers them by group and hides those the
user may not use. The runtime knows no particular skill: it loops over the agent's skills and calls the
hooks they set. Built-in skills and those of installed packages take the same path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flask import Flask, current_app
from pydantic import BaseModel
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, FunctionToolset, PrefixedToolset, WrapperToolset

from app.runtime.services import service_of
from app.runtime.verdicts import Verdict

if TYPE_CHECKING:
    from app.models import Agent, Conversation, Message, ModelConfig
    from app.runtime.record import TurnRecord

Built = AbstractCapability[Any] | AbstractToolset[Any]


class SkillNotInstalled(LookupError):
    """An agent names a skill this server does not have (the message says which)."""


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
    # app/chat/stream.py. None outside a run (the editor's preview).
    announce: Callable[[str, dict[str, Any]], None] | None = None
    # Filled by the builder while it builds the agent's skills: every tool group by name, and the
    # group of each tool known before the run (a tool's `group` metadata overrides it).
    tool_groups: dict[str, ToolGroup] = field(default_factory=dict)
    group_of_tool: dict[str, str] = field(default_factory=dict)
    # The run's output guardrails (app/runtime/guardrails.py): `check_output(text)` names the rule the text
    # breaks and what it asks, or returns None. Needs an app context (`with ctx.app_context():` in a tool).
    # None outside a run.
    check_output: Callable[[str], str | None] | None = None
    # The turn's record (app/runtime/record.py), which the runtime and the skills fill as the run goes;
    # skills add what they own (retrieved passages, proposals). None outside a run.
    record: TurnRecord | None = None

    def tell_page(self, type_: str, data: dict[str, Any]) -> None:
        """Show a change this tool made (a notice, the header) on the chat page now, through the run's stream."""
        if self.announce is not None:
            self.announce(type_, data)

    def service(self, name: str) -> Any:
        """Return the service an area registered for skills as `name` (app/runtime/services.py)."""
        return service_of(self.app, name)

    @contextmanager
    def app_context(self) -> Iterator[None]:
        """Push a fresh app context (and so a fresh database session) for a tool call."""
        with self.app.app_context():
            yield


def _anyone(_ctx: SkillContext) -> bool:
    return True


@dataclass(frozen=True)
class ToolGroup:
    """A named set of tools (a skill's, or some of them) and who may use them.

    A tool joins a group by its metadata (`metadata={"group": name}`), else it is in its skill's first
    declared group, else in a group named after its skill that anyone may use.
    """

    name: str
    title: str = ""
    # `can_use(ctx)` tells whether the run's user may use the group's tools (ctx: the SkillContext).
    can_use: Callable[[SkillContext], bool] = _anyone


@dataclass
class TurnEnd:
    """What a skill's turn hooks are told once a run has ended: which run, how, and what the skill built for it."""

    app: Flask
    conversation_id: int
    run_id: str
    status: str
    # What this skill's `build` returned for the run (empty when the agent could not be built).
    built: list[Built] = field(default_factory=list)
    # Notices (`Message` rows with role "notice") `finish_turn` added: the runtime shows them on the page.
    notices: list[Message] = field(default_factory=list)

    def show(self, notice: Message) -> None:
        """Show a notice this hook added to the transcript on the chat page, before the run's answer."""
        self.notices.append(notice)


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
    # Hooks (each optional; each is given the skill's validated Config first):
    # `pick_model(config, agent, conversation)` names the model configuration the conversation's next turn
    # runs on, or None to leave it to the agent (and the default). Called with an app context.
    pick_model: Callable[[Any, Agent, Conversation], ModelConfig | None] | None = None
    # `finish_turn(config, end)` adds rows to the transaction that stores the turn (never commits); it runs
    # only while the conversation still exists.
    finish_turn: Callable[[Any, TurnEnd], None] | None = None
    # `after_turn(config, end)` runs once the turn is stored, off the runtime loop, in an app context:
    # the place to queue follow-up jobs. Its failures are logged, never the turn's.
    after_turn: Callable[[Any, TurnEnd], None] | None = None
    # `review_answer(config, built, text, record)` judges the run's answer before anyone sees it and returns a
    # `Verdict` (app/runtime/verdicts.py): keep, revise, replace, or ask the model again. `record` is the
    # turn's `TurnRecord` (app/runtime/record.py): its tool calls, changes, proposals and passages. The
    # runtime asks every reviewer about the same text and applies their verdicts by one rule
    # (app/runtime/review.py). While a skill that built something for the run has this hook, the answer
    # is held back and shown once reviewed (then checked by the output guardrails,
    # app/runtime/guardrails.py); without one, it streams through the guardrails' hold-back window
    # (app/runtime/holdback.py). Called off the runtime loop, with no app context: push one to read the
    # database.
    review_answer: Callable[[Any, list[Built], str, TurnRecord], Verdict] | None = None
    # `answer_meta(config, built)` returns what the answer's metadata keeps for this skill (e.g. the
    # action memory's ledger). Called as the turn is stored, unless the answer was refused.
    answer_meta: Callable[[Any, list[Built]], dict[str, Any]] | None = None
    # The tool groups the skill's tools belong to (the first is the default of its tools).
    tool_groups: tuple[ToolGroup, ...] = ()

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

    def groups(self) -> tuple[ToolGroup, ...]:
        """Return the skill's tool groups: those it declares, else one named after it that anyone may use."""
        return self.tool_groups or (ToolGroup(self.name, self.title),)

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


def configured_skills(entries: Iterable[dict[str, Any]]) -> list[tuple[Skill, BaseModel]]:
    """Return the installed skills of an agent's skill entries with their validated settings (app context).

    Entries naming a skill that is not installed are left out: building the agent says so.
    """
    skills = current_app.extensions["skills"]
    found = []
    for entry in entries:
        skill = skills.get(entry.get("name"))
        if skill is not None:
            found.append((skill, skill.parse(entry.get("config"))))
    return found
