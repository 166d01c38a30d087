"""Agents and triggers for the Workspace assistant, through the agent editor's and trigger form's rules.

Admin only, as the pages. Creation reuses an exact-name match; updates name the properties they
support and refuse the rest before applying anything; a value that fails validation keeps the
existing one and is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import current_app
from werkzeug.datastructures import MultiDict

from app.agents import editor
from app.extensions import db
from app.models import Agent, DataTable, Trigger, User
from app.runtime.contract import Invalid
from app.triggers.editing import check_form, save_trigger, trigger_form
from app.workspace.access import require_admin
from app.workspace.reuse import differences, reused

AGENT_CHANGES = ("name", "description", "instructions", "roles", "max_requests", "skills")
TRIGGER_CHANGES = ("name", "kind", "active", "table", "events", "cron", "agent", "run_as", "prompt",
                   "write_back_field")


def _to_update(user_id: int | None, model: type[Agent] | type[Trigger], name: str, given: str,
               changes: dict[str, Any], supported: tuple[str, ...], whose: str) -> Any:
    """Return the agent or trigger `name` for an update, once the admin and the changes' names pass (as the pages).

    `given` is the name as the model wrote it; `whose` says whose changes they are ("an agent's").
    """
    kind = model.__name__.lower()
    require_admin(user_id, f"change {kind}s")
    unknown = sorted(set(changes) - set(supported))
    if unknown:
        raise Invalid(f"Nothing was changed: {', '.join(unknown)} cannot be updated; "
                      f"{whose} changes are {', '.join(supported)}.")
    found = db.session.scalar(db.select(model).where(model.name == name))
    if found is None:
        raise Invalid(f"There is no {kind} {given!r}; call list_{kind}s for the names.")
    return found


def _reused_or_updated(existing: Agent | Trigger, current: dict[str, Any], requested: dict[str, Any],
                       confirm: bool, summary: dict[str, Any], update: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Reuse the agent or trigger of the requested name, listing its differences; apply them only with `confirm`."""
    diffs = differences(current, requested)
    if not diffs or not confirm:
        return reused(type(existing).__name__.lower(), existing.name, existing.id, diffs, summary)
    return update()


def _created(kind: str, summary: dict[str, Any]) -> dict[str, Any]:
    return {"changed": True, "created": True, **summary,
            "summary": f"Created the {kind} {summary['name']} (id {summary['id']})."}


def _updated(applied: list[str], kept: dict[str, str], summary: dict[str, Any]) -> dict[str, Any]:
    """Say what an update applied, and which values it kept and why."""
    result = {"changed": bool(applied), "applied": applied, **summary}
    if kept:
        result["not_applied"] = {key: f"kept the existing value: {why}" for key, why in kept.items()}
    return result


def _agent_summary(agent: Agent) -> dict[str, Any]:
    return {"id": agent.id, "name": agent.name, "description": agent.description, "roles": agent.roles,
            "skills": [entry["name"] for entry in agent.skills or []]}


def list_agents(user_id: int | None) -> dict[str, Any]:
    """List the agents with their skills (admin only)."""
    require_admin(user_id, "list agents")
    return {"agents": [_agent_summary(a) for a in db.session.scalars(db.select(Agent).order_by(Agent.name))],
            "installed_skills": sorted(current_app.extensions["skills"])}


def _agent_values(agent: Agent) -> dict[str, Any]:
    return {"name": agent.name, "description": agent.description, "instructions": agent.instructions,
            "model_config_id": agent.model_config_id, "roles": list(agent.roles or []),
            "max_requests": agent.max_requests}


def _errors(form: editor.AgentForm) -> str:
    listed = [f"{k}: {v}" for k, v in form.error_map().items()]
    listed += [f"skill {i + 1} {k}: {v}" for i, errs in form.skill_errors().items() for k, v in errs.items()]
    return "; ".join(listed)


def create_agent(user_id: int | None, name: str, instructions: str = "", description: str = "",
                 skills: list[dict[str, Any]] | None = None, roles: list[str] | None = None,
                 confirm: bool = False) -> dict[str, Any]:
    """Create an agent, or reuse the agent of the same name (its differences applied only with `confirm`)."""
    require_admin(user_id, "create agents")
    name = " ".join(name.split())
    existing = db.session.scalar(db.select(Agent).where(Agent.name == name))
    if existing is not None:
        asked = {"instructions": instructions or None, "description": description or None, "roles": roles}
        requested = {**asked, "skills": [s.get("name") for s in skills] if skills is not None else None}
        changes = {k: v for k, v in {**asked, "skills": skills}.items() if v is not None}
        summary = _agent_summary(existing)
        return _reused_or_updated(existing, {**_agent_values(existing), "skills": summary["skills"]}, requested,
                                  confirm, summary, lambda: update_agent(user_id, existing.name, changes))
    values = {"name": name, "instructions": instructions, "description": description,
              "roles": roles or ["admin", "user"]}
    form = editor.form_of(values, skills or [], current_app.extensions["skills"], None)
    if not form.valid:
        raise Invalid(f"Nothing was created: {_errors(form)}.")
    agent = Agent()
    db.session.add(agent)
    editor.save(agent, form)
    db.session.commit()
    return _created("agent", _agent_summary(agent))


def update_agent(user_id: int | None, name: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Change an agent's settings or its skills list ([{name, config}]); invalid values keep the existing ones."""
    agent = _to_update(user_id, Agent, " ".join(name.split()), name, changes, AGENT_CHANGES, "an agent's")
    registry = current_app.extensions["skills"]
    values = {**_agent_values(agent), **{k: v for k, v in changes.items() if k != "skills"}}
    skills = changes.get("skills", [dict(s) for s in agent.skills or []])
    form = editor.form_of(values, skills, registry, agent.id)
    kept: dict[str, str] = {}
    if not form.valid:
        for key, why in form.error_map().items():  # keep the existing value of each setting that does not validate
            kept[key] = why
            values[key] = _agent_values(agent).get(key, values.get(key))
        if form.skill_errors() or "skills" in kept:
            kept["skills"] = _errors(form)
            skills = [dict(s) for s in agent.skills or []]
        form = editor.form_of(values, skills, registry, agent.id)
    applied = [key for key in changes if key not in kept]
    if applied and form.valid:
        editor.save(agent, form)
        db.session.commit()
    return _updated(applied, kept, _agent_summary(agent))


def _trigger_summary(trigger: Trigger) -> dict[str, Any]:
    return {"id": trigger.id, "name": trigger.name, "kind": trigger.kind, "active": trigger.active,
            "table": trigger.table.name if trigger.table_id and trigger.table else None, "events": trigger.events,
            "cron": trigger.cron, "agent_id": trigger.agent_id, "run_as_id": trigger.run_as_id}


def list_triggers(user_id: int | None) -> dict[str, Any]:
    """List the triggers (admin only)."""
    require_admin(user_id, "list triggers")
    return {"triggers": [_trigger_summary(t) for t in db.session.scalars(db.select(Trigger).order_by(Trigger.name))]}


def _formdata(values: dict[str, Any]) -> MultiDict:
    """Turn tool values into the trigger form's fields: names resolve to ids as the page's choices do."""
    data = MultiDict()
    for key in ("name", "kind", "cron", "prompt", "write_back_field"):
        if values.get(key) is not None:
            data[key] = str(values[key])
    if values.get("active", True):
        data["active"] = "y"
    table = db.session.scalar(db.select(DataTable).where(DataTable.name == values.get("table"))) \
        if values.get("table") else None
    data["table_id"] = str(table.id if table else 0)
    agent = db.session.scalar(db.select(Agent).where(Agent.name == values.get("agent")))
    data["agent_id"] = str(agent.id if agent else 0)
    run_as = db.session.scalar(db.select(User).where(User.email == values.get("run_as")))
    data["run_as_id"] = str(run_as.id if run_as else 0)
    for event in values.get("events") or []:
        data.add("events", event)
    return data


def _form_errors(form) -> dict[str, str]:
    names = {"table_id": "table", "agent_id": "agent", "run_as_id": "run_as"}
    return {names.get(f.name, f.name): "; ".join(map(str, f.errors)) for f in form if f.errors}


def _trigger_values(trigger: Trigger) -> dict[str, Any]:
    return {"name": trigger.name, "kind": trigger.kind, "active": trigger.active,
            "table": trigger.table.name if trigger.table else None, "events": list(trigger.events or []),
            "cron": trigger.cron, "prompt": trigger.prompt, "write_back_field": trigger.write_back_field,
            "agent": db.session.get(Agent, trigger.agent_id).name if trigger.agent_id else None,
            "run_as": db.session.get(User, trigger.run_as_id).email if trigger.run_as_id else None}


def create_trigger(user_id: int | None, values: dict[str, Any], confirm: bool = False) -> dict[str, Any]:
    """Create a trigger (agent by name, run_as by email, table by name), or reuse the one of the same name."""
    require_admin(user_id, "create triggers")
    unknown = sorted(set(values) - set(TRIGGER_CHANGES))
    if unknown:
        raise Invalid(f"Nothing was created: a trigger has no {', '.join(unknown)}; "
                      f"its settings are {', '.join(TRIGGER_CHANGES)}.")
    existing = db.session.scalar(db.select(Trigger).where(Trigger.name == str(values.get("name", "")).strip()))
    if existing is not None:
        changes = {k: v for k, v in values.items() if k != "name"}
        return _reused_or_updated(existing, _trigger_values(existing), changes, confirm, _trigger_summary(existing),
                                  lambda: update_trigger(user_id, existing.name, changes))
    form = trigger_form(formdata=_formdata(values), csrf=False)
    if not check_form(form):
        raise Invalid(f"Nothing was created: {_form_errors(form)}.")
    trigger = Trigger()
    save_trigger(form, trigger)
    db.session.add(trigger)
    db.session.commit()
    return _created("trigger", _trigger_summary(trigger))


def update_trigger(user_id: int | None, name: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Change a trigger's settings; unsupported properties refuse the update, invalid values keep the existing."""
    trigger = _to_update(user_id, Trigger, name.strip(), name, changes, TRIGGER_CHANGES, "a trigger's")
    current = _trigger_values(trigger)
    values = {**current, **changes}
    form = trigger_form(formdata=_formdata(values), csrf=False)
    kept: dict[str, str] = {}
    if not check_form(form):
        kept = {key: why for key, why in _form_errors(form).items()}
        values = {**values, **{key: current.get(key) for key in kept}}
        form = trigger_form(formdata=_formdata(values), csrf=False)
        if not check_form(form):
            raise Invalid(f"Nothing was changed: {_form_errors(form)}.")
    applied = [key for key in changes if key not in kept]
    if applied:
        save_trigger(form, trigger)
        db.session.commit()
    return _updated(applied, kept, _trigger_summary(trigger))
