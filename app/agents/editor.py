"""The agent editor's form: main fields plus an ordered list of skills, each with its settings form.

The page works without JavaScript: Add, Up, Down and Remove are submit buttons that re-render the
form with the list changed; only Save writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import current_app
from pydantic import ValidationError

from app.database import name_clash
from app.extensions import db
from app.models import ROLES, Agent, ModelConfig
from app.runtime.builder import check_instructions
from app.runtime.skill import Skill, SkillContext
from app.web.pydantic_forms import form_fields, parse_form


def settings_prefix(index: int) -> str:
    """Return the form-name prefix of the settings of the skill at `index`.

    Settings have a namespace of their own, apart from the editor's fields of the skill (`skills-N-name`
    records its type), so no setting can collide with them whatever the skill names its fields.
    """
    return f"skills-{index}-settings-"


@dataclass
class AgentForm:
    values: dict[str, Any]
    skills: list[dict[str, Any]]
    errors: dict[str, str] = field(default_factory=dict)
    skill_errors: dict[int, dict[str, str]] = field(default_factory=dict)
    action: str = "save"

    @classmethod
    def of(cls, agent: Agent | None) -> AgentForm:
        if agent is None:
            cap = current_app.config["MAX_MODEL_REQUESTS_PER_TURN"]
            values = {"name": "", "description": "", "instructions": "", "model_config_id": None,
                      "roles": ["admin", "user"], "max_requests": cap}
            return cls(values, [])
        values = {"name": agent.name, "description": agent.description, "instructions": agent.instructions,
                  "model_config_id": agent.model_config_id, "roles": list(agent.roles or []),
                  "max_requests": agent.max_requests}
        return cls(values, [dict(s) for s in agent.skills or []])

    def skill_forms(self, registry: dict[str, Skill]) -> list[tuple[int, Skill | None, list]]:
        """Return each attached skill with its generated settings fields."""
        out = []
        for index, entry in enumerate(self.skills):
            skill = registry.get(entry["name"])
            fields = form_fields(skill.config, entry.get("config"), self.skill_errors.get(index),
                                 prefix=settings_prefix(index)) if skill else []
            out.append((index, skill, fields))
        return out

    @property
    def valid(self) -> bool:
        return not self.errors and not any(self.skill_errors.values())


def read_form(form: Any, registry: dict[str, Skill], agent_id: int | None) -> AgentForm:
    """Read the submitted editor, apply a list action if one was pressed, and validate."""
    values = {
        "name": " ".join(form.get("name", "").split()),
        "description": form.get("description", "").strip(),
        "instructions": form.get("instructions", "").replace("\r\n", "\n"),
        "model_config_id": form.get("model_config_id", type=int) or None,
        "roles": [r for r in form.getlist("roles") if r in ROLES],
        "max_requests": form.get("max_requests", "25").strip(),
    }
    result = AgentForm(values, [], action=form.get("action", "save"))
    count = form.get("skill_count", 0, type=int)
    for index in range(min(count, 50)):
        name = form.get(f"skills-{index}-name")
        skill = registry.get(name or "")
        if skill is None:
            continue
        settings, errors = parse_form(skill.config, form, prefix=settings_prefix(index))
        result.skill_errors[len(result.skills)] = errors
        result.skills.append({"name": name, "config": settings})
    _apply_action(result, registry, form.get("add_skill", ""))
    _validate(result, agent_id)
    if result.action == "save":  # a list action shows a just-added skill with its defaults, not yet judged
        _check_tool_names(result, registry, agent_id)
    return result


def form_of(values: dict[str, Any], skills: list[dict[str, Any]], registry: dict[str, Skill],
            agent_id: int | None) -> AgentForm:
    """Validate an agent given as values and stored-shape skills (the Workspace tools' path), by the editor's rules."""
    defaults = AgentForm.of(None).values
    merged = {**defaults, **{key: value for key, value in values.items() if key in defaults}}
    merged["name"] = " ".join(str(merged["name"] or "").split())
    merged["roles"] = [role for role in merged["roles"] or [] if role in ROLES]
    result = AgentForm(merged, [])
    for entry in skills:
        skill = registry.get(str(entry.get("name") or ""))
        if skill is None:
            result.errors["skills"] = f"There is no skill {entry.get('name')!r}; installed: {', '.join(registry)}."
            continue
        try:
            settings, errors = skill.parse(entry.get("config")).model_dump(mode="json"), {}
        except ValidationError as error:
            settings = entry.get("config") or {}
            errors = {str(item["loc"][0]) if item["loc"] else "__all__": item["msg"] for item in error.errors()}
        result.skill_errors[len(result.skills)] = errors
        result.skills.append({"name": skill.name, "config": settings})
    _validate(result, agent_id)
    _check_tool_names(result, registry, agent_id)
    return result


def _apply_action(result: AgentForm, registry: dict[str, Skill], add_skill: str) -> None:
    action, _, arg = result.action.partition(":")
    if action == "add":
        if add_skill in registry:
            result.skills.append({"name": add_skill, "config": {}})  # the form shows the Config's defaults
        return
    if not arg.isdigit() or int(arg) >= len(result.skills):
        return
    index = int(arg)
    skills, errors = result.skills, result.skill_errors
    if action == "remove":
        skills.pop(index)
        result.skill_errors = {i if i < index else i - 1: e for i, e in errors.items() if i != index}
    elif action in ("up", "down"):
        other = index - 1 if action == "up" else index + 1
        if 0 <= other < len(skills):
            skills[index], skills[other] = skills[other], skills[index]
            errors[index], errors[other] = errors.get(other, {}), errors.get(index, {})


def _validate(result: AgentForm, agent_id: int | None) -> None:
    values, errors = result.values, result.errors
    if not values["name"]:
        errors["name"] = "Give the agent a name."
    elif len(values["name"]) > 80:
        errors["name"] = "Use at most 80 characters."
    elif clash := name_clash(Agent.name, values["name"], agent_id, "agent"):
        errors["name"] = clash
    if len(values["description"]) > 300:
        errors["description"] = "Use at most 300 characters."
    if len(values["instructions"]) > 20_000:
        errors["instructions"] = "Use at most 20,000 characters."
    elif problem := check_instructions(values["instructions"]):
        errors["instructions"] = problem
    if values["model_config_id"] and db.session.get(ModelConfig, values["model_config_id"]) is None:
        errors["model_config_id"] = "Choose a model configuration that exists."
    if not values["roles"]:
        errors["roles"] = "Choose at least one role that may use the agent."
    try:
        values["max_requests"] = int(values["max_requests"])
        if not 1 <= values["max_requests"] <= 200:
            raise ValueError
    except (TypeError, ValueError):
        errors["max_requests"] = "Use a whole number from 1 to 200."


def _check_tool_names(result: AgentForm, registry: dict[str, Skill], agent_id: int | None) -> None:
    """Refuse two skills that would give tools of the same name: the run could not start.

    The message goes beside the setting that holds the name, when one does, else on the skill.
    """
    ctx = SkillContext(app=current_app._get_current_object(), user_id=None, agent_id=agent_id,
                       extras={"editor": True})
    owners: dict[str, int] = {}
    for index, entry in enumerate(result.skills):
        if result.skill_errors.get(index):
            continue  # settings that do not validate cannot be built
        for name in sorted(registry[entry["name"]].tool_names(entry["config"], ctx)):
            first = owners.setdefault(name, index)
            if first == index:
                continue
            title = registry[result.skills[first]["name"]].title
            field_name = next((key for key, value in entry["config"].items() if value == name), "__all__")
            result.skill_errors.setdefault(index, {}).setdefault(
                field_name, f"Skill {first + 1} ({title}) already gives a tool named {name}; "
                            "each tool of an agent needs its own name.")


def save(agent: Agent, result: AgentForm) -> None:
    """Write a validated form to the agent; the caller commits."""
    for key in ("name", "description", "instructions", "model_config_id", "roles", "max_requests"):
        setattr(agent, key, result.values[key])
    agent.skills = result.skills
