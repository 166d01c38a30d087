"""The agent editor's form (Flask-WTF): main fields plus an ordered list of skills, each with its settings form.

A skill entry is `skills-N-name` (its type) and `skills-N-settings-<field>`, its settings form generated from
the skill's Config (`app/web/settings_forms.py`). The page works without JavaScript: Add, Up, Down and Remove
are submit buttons that re-render the form with the list changed; only Save writes.
"""

from __future__ import annotations

import re
from typing import Any

from flask import current_app
from flask_wtf import FlaskForm
from wtforms import Field, FieldList, StringField, TextAreaField
from wtforms.utils import unset_value
from wtforms.validators import ValidationError

from app.database import name_clash
from app.extensions import db
from app.models import Agent, ModelConfig, User
from app.models.base import utcnow
from app.runtime.builder import check_instructions
from app.runtime.skill import Skill, SkillContext
from app.web.form_fields import ChosenIdField, NumberField, RolesField, stripped, words
from app.web.settings_forms import SettingsForm

MAX_SKILLS = 50
MAX_NEVER_ASK = 100
TOOL_NAME = re.compile(r"^[A-Za-z][\w-]*$")
MAIN_FIELDS = ("name", "description", "instructions", "model_config_id", "roles", "max_requests")
# Who may decide on the agent's waiting tool calls besides the chat's owner: the agent editor's alone (the
# Workspace tools neither read nor change them).
APPROVER_FIELDS = ("approver_roles", "approver_emails")
MAX_APPROVERS = 50


class SkillEntry(Field):
    """One skill of the agent: `skills-N-name` names it; its settings are the form `skills-N-settings-`.

    Settings have a namespace of their own, apart from the entry's `name`, so no setting can collide with it
    whatever the skill names its fields. `form` is None for a skill that is not installed.
    """

    def process(self, formdata, data=unset_value, extra_filters=None) -> None:
        given = data if isinstance(data, dict) else {}
        self.process_errors, self.object_data = [], data
        if formdata is not None:
            self.skill_name = formdata.get(f"{self.name}-name", "")
        else:
            self.skill_name = str(given.get("name") or "")
        self.skill: Skill | None = self._form.registry.get(self.skill_name)
        self.given_config = given.get("config") or {}
        self.form = SettingsForm(self.skill.config, f"{self.name}-settings-", formdata, given.get("config")) \
            if self.skill else None

    @property
    def data(self) -> dict[str, Any]:
        """The entry as stored: the skill's name and its settings."""
        return {"name": self.skill_name, "config": self.form.settings if self.form else self.given_config}

    @property
    def problems(self) -> dict[str, str]:
        return self.form.problems if self.form else {}

    def validate(self, form, extra_validators=()) -> bool:
        self.errors = [] if self.form is None or self.form.validate() else list(self.problems.values())
        return not self.errors


def _lines(value) -> str:
    return (value or "").replace("\r\n", "\n")


class AgentForm(FlaskForm):
    name = StringField("Name", filters=[words])
    description = StringField("Description", filters=[stripped])
    instructions = TextAreaField("Instructions", filters=[_lines])
    model_config_id = ChosenIdField("Model")
    roles = RolesField("Who may use it")
    max_requests = NumberField("Model requests per turn (cap)", kind=int, low=1, high=200, required=True,
                               message="Use a whole number from 1 to 200.", absent="25")
    never_ask = TextAreaField("Destructive tools that never ask", filters=[_lines])
    approver_roles = RolesField("Roles whose people may decide")
    approver_emails = TextAreaField("People who may decide (e-mails, one a line)", filters=[_lines])
    skills = FieldList(SkillEntry(), max_entries=MAX_SKILLS)
    action = StringField(default="save")
    add_skill = StringField()

    def __init__(self, *args, registry: dict[str, Skill], agent_id: int | None = None, **kwargs) -> None:
        self.registry, self.agent_id = registry, agent_id  # the skill entries read them while processing
        self.unknown_skill: str | None = None
        super().__init__(*args, **kwargs)

    @classmethod
    def of(cls, agent: Agent | None, registry: dict[str, Skill]) -> AgentForm:
        """The form filled with an agent's settings (a new agent's defaults for None)."""
        return cls(formdata=None, data=_stored(agent), registry=registry, agent_id=agent.id if agent else None)

    def validate_name(self, field) -> None:
        if not field.data:
            raise ValidationError("Give the agent a name.")
        if len(field.data) > 80:
            raise ValidationError("Use at most 80 characters.")
        if clash := name_clash(Agent.name, field.data, self.agent_id, "agent"):
            raise ValidationError(clash)

    def validate_description(self, field) -> None:
        if len(field.data) > 300:
            raise ValidationError("Use at most 300 characters.")

    def validate_instructions(self, field) -> None:
        if len(field.data) > 20_000:
            raise ValidationError("Use at most 20,000 characters.")
        if problem := check_instructions(field.data):
            raise ValidationError(problem)

    def validate_model_config_id(self, field) -> None:
        if field.data and (not isinstance(field.data, int) or db.session.get(ModelConfig, field.data) is None):
            raise ValidationError("Choose a model configuration that exists.")

    def validate_never_ask(self, field) -> None:
        names = self.never_ask_tools()
        if len(names) > MAX_NEVER_ASK:
            raise ValidationError(f"Name at most {MAX_NEVER_ASK} tools.")
        if any(len(name) > 200 or not TOOL_NAME.match(name) for name in names):
            raise ValidationError("Write one tool name per line: letters, digits, _ or - (at most 200).")

    def never_ask_tools(self) -> list[str]:
        """The tool names of the "never ask" setting, one per line, without repeats."""
        return list(dict.fromkeys(line.strip() for line in (self.never_ask.data or "").splitlines() if line.strip()))

    def validate_roles(self, field) -> None:
        if not field.data:
            raise ValidationError("Choose at least one role that may use the agent.")

    def validate_approver_roles(self, field) -> None:
        if "guest" in (field.data or []):
            raise ValidationError("Guests decide nothing: choose admins or users.")

    def validate_approver_emails(self, field) -> None:
        emails = list(dict.fromkeys(line.strip().lower() for line in (field.data or "").splitlines() if line.strip()))
        if len(emails) > MAX_APPROVERS:
            raise ValidationError(f"Name at most {MAX_APPROVERS} people.")
        found = {user.email: user for user in db.session.scalars(db.select(User).where(User.email.in_(emails)))}
        unknown = [email for email in emails if email not in found or not found[email].active]
        if unknown:
            raise ValidationError(f"No active account has the e-mail {', '.join(unknown)}.")
        if guests := [email for email in emails if found[email].role == "guest"]:
            raise ValidationError(f"Guests decide nothing: {', '.join(guests)}.")
        self.approver_ids = [found[email].id for email in emails]

    def values(self) -> dict[str, Any]:
        """The agent's columns as submitted."""
        return {name: self[name].data for name in MAIN_FIELDS}

    def stored_skills(self) -> list[dict[str, Any]]:
        """The skills as they will be stored, in order: [{name, config}]."""
        return [entry.data for entry in self.skills if entry.skill]

    def error_map(self) -> dict[str, str]:
        """Each main field's first error by name (`skills` for a skill that is not installed)."""
        errors = {name: self[name].errors[0] for name in (*MAIN_FIELDS, "never_ask", *APPROVER_FIELDS)
                  if self[name].errors}
        if self.unknown_skill:
            errors["skills"] = self.unknown_skill
        return errors

    def skill_errors(self) -> dict[int, dict[str, str]]:
        """Each skill's problems by setting name (`__all__` for the skill), by position."""
        return {index: dict(entry.problems) for index, entry in enumerate(self.skills) if entry.problems}

    @property
    def valid(self) -> bool:
        return not self.error_map() and not self.skill_errors()

    def forget_errors(self) -> None:
        """Drop every message: a list action shows the changed list, judged on Save."""
        for field in self:
            field.errors = []
        for entry in self.skills:
            if entry.form:
                entry.form.problems = {}
                for setting in entry.form:
                    setting.errors = []


def _stored(agent: Agent | None) -> dict[str, Any]:
    if agent is None:
        return {"name": "", "description": "", "instructions": "", "model_config_id": None,
                "roles": ["admin", "user"], "max_requests": current_app.config["MAX_MODEL_REQUESTS_PER_TURN"],
                "never_ask": "", "skills": [], "approver_roles": [], "approver_emails": ""}
    emails = db.session.scalars(db.select(User.email).where(User.id.in_(agent.approver_ids or [])).order_by(User.email))
    return {**{name: getattr(agent, name) for name in MAIN_FIELDS}, "roles": list(agent.roles or []),
            "never_ask": "\n".join((agent.never_ask or {}).get("tools") or []),
            "skills": [dict(s) for s in agent.skills or []], "approver_roles": list(agent.approver_roles or []),
            "approver_emails": "\n".join(emails)}


def read_form(registry: dict[str, Skill], agent_id: int | None) -> AgentForm:
    """Read the submitted editor, apply a list action if one was pressed, and validate."""
    form = AgentForm(registry=registry, agent_id=agent_id)
    for index in reversed(range(len(form.skills))):
        if form.skills[index].skill is None:  # a skill no longer installed is dropped
            form.skills.pop_entry(index)
    form.validate()
    if form.action.data == "save":
        _check_tool_names(form)
    else:  # a list action shows a just-added skill with its defaults, not yet judged
        _apply_action(form)
        form.forget_errors()
    return form


def form_of(values: dict[str, Any], skills: list[dict[str, Any]], registry: dict[str, Skill],
            agent_id: int | None) -> AgentForm:
    """Validate an agent given as values and stored-shape skills (the Workspace tools' path), by the editor's rules."""
    # The "never ask" setting is the admin's alone, in the editor: the Workspace tools keep what is set.
    existing = db.session.get(Agent, agent_id) if agent_id is not None else None
    data = {**_stored(None), "never_ask": _stored(existing)["never_ask"] if existing else "",
            **{key: value for key, value in values.items() if key in MAIN_FIELDS}}
    known, unknown = [], None
    for entry in skills:
        name = str(entry.get("name") or "")
        if name in registry:
            known.append({"name": name, "config": entry.get("config")})
        else:
            unknown = f"There is no skill {entry.get('name')!r}; installed: {', '.join(registry)}."
    form = AgentForm(formdata=None, data={**data, "skills": known}, registry=registry, agent_id=agent_id,
                     meta={"csrf": False})
    form.unknown_skill = unknown
    form.validate()
    _check_tool_names(form)
    return form


def _apply_action(form: AgentForm) -> None:
    action, _, arg = (form.action.data or "").partition(":")
    skills = form.skills
    if action == "add":
        if form.add_skill.data in form.registry and len(skills) < MAX_SKILLS:
            skills.append_entry({"name": form.add_skill.data, "config": {}})  # the form shows the Config's defaults
        return
    if not arg.isdigit() or int(arg) >= len(skills):
        return
    index = int(arg)
    if action == "remove":
        skills.pop_entry(index)
    elif action in ("up", "down"):
        other = index - 1 if action == "up" else index + 1
        if 0 <= other < len(skills):
            skills.insert_entry(other, skills.pop_entry(index).data)


def _check_tool_names(form: AgentForm) -> None:
    """Refuse two skills that would give tools of the same name: the run could not start.

    The message goes beside the setting that holds the name, when one does, else on the skill.
    """
    ctx = SkillContext(app=current_app._get_current_object(), user_id=None, agent_id=form.agent_id,
                       extras={"editor": True})
    owners: dict[str, int] = {}
    for index, entry in enumerate(form.skills):
        if entry.problems:
            continue  # settings that do not validate cannot be built
        settings = entry.form.settings
        for name in sorted(entry.skill.tool_names(settings, ctx)):
            first = owners.setdefault(name, index)
            if first == index:
                continue
            setting = next((key for key, value in settings.items() if value == name), "__all__")
            entry.form.add_error(setting, f"Skill {first + 1} ({form.skills[first].skill.title}) already gives "
                                          f"a tool named {name}; each tool of an agent needs its own name.")


def save(agent: Agent, form: AgentForm, by: str | None = None) -> None:
    """Write a validated form to the agent; the caller commits.

    A change of the "never ask" tools records who made it and when (`by`, an email), shown on the agent's
    page and named in the approvals audit of every call it lets through.
    """
    for key, value in form.values().items():
        setattr(agent, key, value)
    agent.skills = form.stored_skills()
    tools = form.never_ask_tools()
    if tools != list((agent.never_ask or {}).get("tools") or []):
        agent.never_ask = {"tools": tools, "set_by": by or "", "set_at": utcnow().isoformat()} if tools else None


def save_approvers(agent: Agent, form: AgentForm) -> None:
    """Write the validated approvers of the editor's form to the agent; the caller commits."""
    agent.approver_roles = list(form.approver_roles.data or [])
    agent.approver_ids = list(getattr(form, "approver_ids", []))
