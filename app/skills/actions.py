"""Action as tool: a configured action (another agent, a webhook call, a table insert) becomes one tool.

The admin writes the tool's name, its description and a JSON schema for its arguments; the model's
arguments are checked against that schema (jsonschema) before the action runs.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import httpx2
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.extensions import db
from app.guards.credentials import HeaderLines, fill_headers
from app.guards.outbound import fetch, policy_from_config
from app.models import User
from app.runtime.contract import Skill, SkillContext, mutation, render, template_error
from app.skills.subagent import TOOL_NAME, delegate, reach
from app.tables import permissions, records, schema

RESULT_CHARS = 4_000
AGENT_MAX_DEPTH = 2
EMPTY_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
DEFAULT_PROMPT = "Carry out this request. Its arguments are:\n{{ arguments_json }}"



class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    tool_name: str = Field(..., max_length=64, title="Tool name")
    """The tool's name as the model sees it, such as create_ticket."""

    description: str = Field(..., max_length=2_000, title="Description",
                             json_schema_extra={"widget": "textarea"})
    """What the action does and when the model should use it."""

    kind: Literal["webhook", "agent", "table_insert"] = Field("webhook", title="Action")
    """webhook: call a URL with the arguments. agent: ask another agent, with the arguments in its prompt.
    table_insert: insert the arguments as a row of a data table."""

    parameters: dict[str, Any] = Field(EMPTY_SCHEMA, title="Parameters")
    """The tool's arguments as a JSON schema of type object; the model's arguments are checked against it."""

    url: str = Field("", max_length=300, title="URL", validate_default=True)
    """Webhook only: the address called. It goes through the outbound guard like every tool request."""

    method: Literal["POST", "PUT", "PATCH", "GET"] = Field("POST", title="Method")
    """Webhook only: POST, PUT and PATCH send the arguments as a JSON body, GET as query parameters."""

    headers: HeaderLines = Field(default_factory=list, title="Headers")
    """Webhook only: one header per line, as Name: value; {env:NAME} and {credential:NAME} are filled in."""

    agent: str = Field("", max_length=80, title="Agent", validate_default=True)
    """Agent only: the agent asked, by name or id. Users reach it only if their role may use it."""

    prompt: str = Field(DEFAULT_PROMPT, max_length=4_000, title="Prompt",
                        json_schema_extra={"widget": "textarea"})
    """Agent only: what the agent is asked; {{ arguments.name }} and {{ arguments_json }} are filled in."""

    table: str = Field("", max_length=40, title="Table", validate_default=True)
    """Table insert only: the data table's name. The user's role must be allowed to insert into it."""

    @field_validator("tool_name")
    @classmethod
    def valid_tool_name(cls, value: str) -> str:
        if not TOOL_NAME.match(value.strip()):
            raise ValueError("Start with a letter; use letters, digits, _ or - (at most 64).")
        return value.strip()

    @field_validator("description")
    @classmethod
    def some_description(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Say what the action does and when the model should use it.")
        return value.strip()

    @field_validator("parameters")
    @classmethod
    def valid_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            Draft202012Validator.check_schema(value)
        except SchemaError as error:
            raise ValueError(f"Not a valid JSON schema: {error.message}") from error
        if value.get("type") != "object":
            raise ValueError('The schema must describe an object: {"type": "object", "properties": {...}}.')
        return value

    @field_validator("url")
    @classmethod
    def url_for_webhook(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("kind") == "webhook" and not re.match(r"^https?://[^\s/]+", value.strip()):
            raise ValueError("Give the URL to call, starting with http:// or https://.")
        return value.strip()

    @field_validator("agent")
    @classmethod
    def agent_for_agent(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("kind") == "agent" and not value.strip():
            raise ValueError("Name the agent to ask (its name or id).")
        return value.strip()

    @field_validator("prompt")
    @classmethod
    def valid_prompt(cls, value: str) -> str:
        if problem := template_error(value):
            raise ValueError(problem)
        return value

    @field_validator("table")
    @classmethod
    def table_for_insert(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("kind") == "table_insert" and not value.strip():
            raise ValueError("Name the data table to insert into.")
        return value.strip()


Runner = Callable[[RunContext[Any], SkillContext, Config, dict[str, Any]], Awaitable[str]]


async def call_webhook(run: RunContext[Any], ctx: SkillContext, config: Config,
                       arguments: dict[str, Any]) -> str:
    """Call the configured URL through the guarded outbound client and report its answer."""
    def resolve_headers() -> dict[str, str]:
        with ctx.app_context():
            return fill_headers(config.headers, ctx.user_id)

    headers = await asyncio.to_thread(resolve_headers)
    policy = policy_from_config(ctx.app.config)
    if config.method == "GET":
        params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
        url = str(httpx2.URL(config.url).copy_merge_params(params))
        response = await fetch("GET", url, policy=policy, headers=headers)
    else:
        response = await fetch(config.method, config.url, policy=policy, headers=headers, json=arguments)
    body = _clip(response.text())
    if response.status >= 400:
        raise ToolFailed(f"The webhook answered {response.status}: {body[:500]}")
    return f"The webhook answered {response.status}." + (f"\n{body}" if body else "")


async def ask_agent(run: RunContext[Any], ctx: SkillContext, config: Config,
                    arguments: dict[str, Any]) -> str:
    """Ask the configured agent, checked for the acting user like a subagent, with the arguments."""
    hop = reach(ctx, config.agent, AGENT_MAX_DEPTH)
    prompt = render(config.prompt, {
        "arguments": arguments, "arguments_json": json.dumps(arguments, ensure_ascii=False, indent=2)})
    return await delegate(run, ctx, hop, prompt)


async def insert_into_table(run: RunContext[Any], ctx: SkillContext, config: Config,
                            arguments: dict[str, Any]) -> str:
    """Insert the arguments as a row, if the acting user's role may insert into the table."""
    def insert() -> str:
        with ctx.app_context():
            definition = schema.get_table(config.table)
            if definition is None:
                raise ToolFailed(f"The table {config.table!r} does not exist (any more).")
            user = db.session.get(User, ctx.user_id) if ctx.user_id is not None else None
            if user is None or not user.is_active or not permissions.allowed(definition, user.role, "insert"):
                raise ToolFailed(f"The user may not add rows to the table {definition.label!r}.")
            values, errors = records.validate(definition, arguments)
            if errors:
                said = " ".join(f"{name}: {error}" for name, error in errors.items())
                raise ModelRetry(f"The row was not inserted: {said}")
            row_id = records.insert_row(definition, values, user_id=user.id, run_id=ctx.run_id)
            return f"Inserted row {row_id} into the table {definition.label}."

    # Off the runtime loop: an insert commits and fires table triggers, which may run agents of their own.
    return await asyncio.to_thread(insert)


RUNNERS: dict[str, Runner] = {"webhook": call_webhook, "agent": ask_agent, "table_insert": insert_into_table}


def check_arguments(validator: Draft202012Validator, arguments: dict[str, Any]) -> None:
    """Raise ModelRetry, saying what to fix, when the arguments do not match the schema."""
    problems = sorted(validator.iter_errors(arguments), key=lambda error: list(error.path))
    if problems:
        said = "; ".join(f"{'/'.join(map(str, p.path)) or 'arguments'}: {p.message}" for p in problems[:5])
        raise ModelRetry(f"The arguments do not match the tool's schema: {said}")


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    validator = Draft202012Validator(config.parameters)
    runner = RUNNERS[config.kind]

    async def act(run: RunContext[Any], **arguments: Any) -> str:
        check_arguments(validator, arguments)
        return await runner(run, ctx, config, arguments)

    tool = Tool.from_schema(act, name=config.tool_name, description=config.description,
                            json_schema=config.parameters, takes_ctx=True)
    tool.metadata = effect_of(config)
    return FunctionToolset([tool])


def effect_of(config: Config) -> dict[str, Any]:
    """What a call of the action does: a webhook sends (GET only reads), an agent runs, an insert adds a row."""
    if config.kind == "webhook":
        return {} if config.method == "GET" else mutation("send", "request", destructive=True)
    if config.kind == "agent":
        return mutation("run", "agent", target=config.agent)
    return mutation("create", "row", target=config.table)


def _clip(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + "…"


skill = Skill(name="actions", title="Action as tool", config=Config, build=build,
              description="A configured action (agent, webhook, table insert) as a tool with a JSON schema.")
