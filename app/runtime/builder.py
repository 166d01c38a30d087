"""Build a pydantic-ai Agent from an agent's configuration, for one user and one run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flask import Flask
from jinja2 import TemplateError
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import AbstractToolset

from app.models import Agent, User
from app.runtime.deferred import never_ask_audit, standing_approvals
from app.runtime.documentation_role import DocumentationRole
from app.runtime.failures import tool_failure
from app.runtime.guardrails import OutputGuardrail
from app.runtime.model_spec import ModelSpec
from app.runtime.profiles import profile_for
from app.runtime.prompts import clock_variables, render
from app.runtime.providers import build_model
from app.runtime.record import TurnLog, TurnRecord
from app.runtime.review import AnswerReview, reviewers_of
from app.runtime.skill import Skill, SkillContext, SkillNotInstalled, _tool_names
from app.runtime.untrusted import UntrustedContent
from app.runtime.verifier import verifier_for


@dataclass(frozen=True)
class AgentSpec:
    """A detached copy of an agent's configuration, safe to carry into the runtime loop."""

    id: int | None
    name: str
    instructions: str
    skills: tuple[dict[str, Any], ...]
    max_requests: int
    model: ModelSpec
    # Destructive tools the admin set to run without a card after untrusted content (app/runtime/untrusted.py).
    never_ask: tuple[str, ...] = ()
    never_ask_by: str = ""

    @classmethod
    def of(cls, agent: Agent, model: ModelSpec) -> AgentSpec:
        setting = agent.never_ask or {}
        return cls(agent.id, agent.name, agent.instructions or "", tuple(agent.skills or ()),
                   agent.max_requests, model, tuple(setting.get("tools") or ()), setting.get("set_by") or "")


@dataclass(frozen=True)
class Person:
    id: int | None
    name: str
    email: str
    role: str

    @classmethod
    def of(cls, user: User | None) -> Person:
        if user is None:
            return cls(None, "", "", "guest")
        return cls(user.id, user.name, user.email, user.role)


@dataclass
class ToolErrorsAsResults(AbstractCapability[Any]):
    """Every tool call gets a result: an exception becomes a failed result the model can read."""

    async def on_tool_execute_error(self, ctx, *, call, tool_def, args, error):  # noqa: D401
        raise ToolFailed(tool_failure(error)) from error


@dataclass
class BuiltAgent:
    agent: PydanticAgent
    context: SkillContext
    capabilities: list[Any] = field(default_factory=list)
    # Each of the agent's skills with its validated Config and what its build returned, for the turn hooks.
    skills: list[tuple[Skill, Any, list[Any]]] = field(default_factory=list)
    # The output rules of the run (the user's secrets, the agent's instructions as rendered).
    guardrail: OutputGuardrail | None = None
    # The turn's record and the answer review that reads it (app/runtime/record.py, app/runtime/review.py).
    record: TurnRecord = field(default_factory=TurnRecord)
    review: AnswerReview | None = None


def render_instructions(template: str, person: Person, agent_name: str, now: datetime | None = None) -> str:
    """Fill the instruction variables ({{ user.name }}, {{ today }}, ...) in a sandbox."""
    variables = {
        "user": {"name": person.name, "email": person.email, "role": person.role},
        "agent": {"name": agent_name},
        **clock_variables(now),
    }
    return render(template, variables)


def check_instructions(template: str) -> str | None:
    """Return an error message when the instruction template is not valid, else None."""
    try:
        render_instructions(template, Person(0, "Ada", "ada@example.org", "user"), "agent")
    except TemplateError as error:
        return f"Template error: {error}"
    return None


def _register_groups(context: SkillContext, skill: Skill, items: list[Any]) -> None:
    """Note the skill's tool groups and the default group of each tool it built (for the Tool routing skill)."""
    groups = skill.groups()
    for group in groups:
        context.tool_groups.setdefault(group.name, group)
    for item in items:
        for name in _tool_names(item):
            context.group_of_tool.setdefault(name, groups[0].name)


def build_agent(app: Flask, spec: AgentSpec, person: Person, conversation_id: int | None,
                run_id: str | None, extras: dict[str, Any] | None = None,
                announce: Callable[[str, dict[str, Any]], None] | None = None,
                record: TurnRecord | None = None) -> BuiltAgent:
    """Create the agent with its model, instructions and the capabilities and toolsets of its skills.

    `announce` stores a run event (the run's `EventWriter.emit`): skills tell the page through it.
    `record` is the turn's record (one is made when not given): the runtime and the skills fill it.
    """
    instructions = render_instructions(spec.instructions, person, spec.name)
    guardrail = OutputGuardrail(person.id, instructions)
    extras = dict(extras or {})
    record = record if record is not None else TurnRecord(locale=extras.get("locale"))
    record.verifier = verifier_for(spec.model)
    context = SkillContext(app=app, user_id=person.id, agent_id=spec.id, conversation_id=conversation_id,
                           run_id=run_id, role=person.role, user_name=person.name, extras=extras,
                           announce=announce, check_output=guardrail.problem, record=record)
    skills = app.extensions["skills"]
    capabilities: list[Any] = [
        ToolErrorsAsResults(), TurnLog(record),
        UntrustedContent(record, frozenset(spec.never_ask),
                         audit=never_ask_audit(app, conversation_id, run_id, spec, person)),
        standing_approvals(app, conversation_id, run_id, spec.id, spec.name, person.id, person.email)]
    toolsets: list[AbstractToolset[Any]] = []
    built_skills: list[tuple[Skill, Any, list[Any]]] = []
    for entry in spec.skills:
        skill = skills.get(entry.get("name"))
        if skill is None:
            raise SkillNotInstalled(f"The agent uses the skill {entry.get('name')!r}, which is not installed.")
        items = skill.built(entry.get("config"), context)
        _register_groups(context, skill, items)
        built_skills.append((skill, skill.parse(entry.get("config")), items))
        for item in items:
            (toolsets if isinstance(item, AbstractToolset) else capabilities).append(item)
    review = AnswerReview(reviewers_of(built_skills), record)
    profile = profile_for(spec.model)
    capabilities += [review, DocumentationRole(record, profile.settings("documentation"))]
    agent = PydanticAgent(
        build_model(spec.model),
        name=spec.name,
        instructions=instructions or None,
        model_settings=profile.settings("orchestration"),
        capabilities=capabilities,
        toolsets=toolsets,
        # A run that waits for a person (approval, plan, question) ends with the calls it deferred.
        output_type=profile.output_type("orchestration"),
        # The answer review owns the output retries: it never asks more often than its budget.
        retries={"output": review.budget},
    )
    return BuiltAgent(agent=agent, context=context, capabilities=capabilities, skills=built_skills,
                      guardrail=guardrail, record=record, review=review)
