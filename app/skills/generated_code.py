"""Generate and run JavaScript: the model writes code for a task and it runs in the sandbox.

What the code may touch is decided by WHICH callbacks it is offered, not by asking it to behave: with
"Read tables" only `skilldesk.tables()` and `skilldesk.query()` exist, `skilldesk.insert()` only with
"Insert rows", `skilldesk.fetch()` only with "Fetch URLs". Every table callback checks the acting user's
current role against the table's permissions, on every call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.extensions import db
from app.guards.outbound import OutboundPolicy, fetch, policy_from_config
from app.guards.sandbox import Callbacks, SandboxLimits, SandboxMemoryExceeded, SandboxTimeout, ScriptError, run_script
from app.models import DataTable, User
from app.runtime.contract import Skill, SkillContext
from app.tables import permissions, records
from app.tables.schema import get_table

MB = 1024 * 1024
FETCH_TEXT_CHARS = 200_000
QUERY_MAX_ROWS = 1_000


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    read_tables: bool = Field(False, title="Read tables")
    """Let the code read the data tables the user may read (skilldesk.tables and skilldesk.query)."""
    insert_rows: bool = Field(False, title="Insert rows")
    """Let the code add rows to the tables the user may insert into (skilldesk.insert)."""
    allow_fetch: bool = Field(False, title="Fetch URLs")
    """Let the code fetch URLs (skilldesk.fetch) via the guarded client; internal addresses stay refused."""
    max_calls: int = Field(50, ge=1, le=1_000, title="Calls per run")
    """How many skilldesk.* calls one run of the code may make."""
    timeout_seconds: float = Field(5.0, gt=0, le=60, title="Time limit (seconds)")
    """Seconds the code may run, its callbacks included."""
    max_memory_mb: int = Field(64, ge=16, le=1_024, title="Memory limit (MB)")
    """Megabytes of JavaScript memory the code may use."""


class CallBudgetExceeded(RuntimeError):
    """The code made more skilldesk.* calls than the skill allows."""


@dataclass
class TableAccess:
    """The adapter between sandbox callbacks and app.tables, acting as one user with their current role."""

    ctx: SkillContext
    run_id: str | None = None

    def tables(self) -> list[dict[str, Any]]:
        """List the tables the user may read, with their fields."""
        with self.ctx.app_context():
            role = self._role()
            return [_describe(table) for table in permissions.readable_tables(role)]

    def query(self, name: str, options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Return rows of a table the user may read: {search, filters: [{field, op, value}], sort, limit}."""
        options = options if isinstance(options, dict) else {}
        with self.ctx.app_context():
            definition = self._table(name, "read")
            filters = [records.Filter(str(f.get("field", "")), str(f.get("op", "eq")),
                                      None if f.get("value") is None else str(f.get("value")))
                       for f in options.get("filters") or [] if isinstance(f, dict)]
            query = records.select_rows(definition, str(options.get("search") or ""), filters,
                                        str(options.get("sort") or "id"))
            limit = max(1, min(int(options.get("limit") or 100), QUERY_MAX_ROWS))
            rows = db.session.execute(query.limit(limit)).mappings()
            return [records.json_row(row) for row in rows]

    def insert(self, name: str, values: dict[str, Any]) -> dict[str, Any]:
        """Insert a row into a table the user may insert into; return it with its id."""
        if not isinstance(values, dict):
            raise TypeError("skilldesk.insert(table, values) takes the values as an object")
        with self.ctx.app_context():
            definition = self._table(name, "insert")
            cleaned, errors = records.validate(definition, values)
            if errors:
                raise ValueError(" ".join(f"{field}: {message}" for field, message in errors.items()))
            row_id = records.insert_row(definition, cleaned, user_id=self.ctx.user_id, run_id=self.run_id)
            return records.json_row(records.get_row(definition, row_id) or {"id": row_id})

    def _role(self) -> str | None:
        # Read now, not when the run started: a role change or a deactivated account applies at once.
        user = db.session.get(User, self.ctx.user_id) if self.ctx.user_id else None
        return user.role if user is not None and user.active else None

    def _table(self, name: str, action: str) -> DataTable:
        definition, role = get_table(str(name)), self._role()
        # A table the user may neither read nor use this way looks like one that does not exist.
        if definition is None or not any(permissions.allowed(definition, role, a) for a in ("read", action)):
            if action == "read":
                raise LookupError(f"There is no table {name!r} you may read; skilldesk.tables() lists them.")
            raise LookupError(f"There is no table {name!r} you may {action} rows into.")
        if not permissions.allowed(definition, role, action):
            raise PermissionError(f"You may not {action} rows of the table {name!r}.")
        return definition


def _describe(table: DataTable) -> dict[str, Any]:
    fields = [{"name": f.name, "label": f.label, "kind": f.kind, "required": f.required,
               **({"choices": f.choices} if f.choices else {})} for f in table.fields]
    return {"name": table.name, "label": table.label, "description": table.description, "fields": fields}


def callbacks_for(config: Config, ctx: SkillContext, policy: OutboundPolicy, run_id: str | None) -> Callbacks:
    """Return the skilldesk.* functions this configuration offers, counted against one call budget."""
    offered: Callbacks = {}
    access = TableAccess(ctx, run_id)
    if config.read_tables:
        offered["tables"] = access.tables
        offered["query"] = access.query
    if config.insert_rows:
        offered["insert"] = access.insert
    if config.allow_fetch:
        async def fetch_url(url: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
            options = options if isinstance(options, dict) else {}
            body, headers = options.get("body"), options.get("headers") or {}
            response = await fetch(str(options.get("method") or "GET"), str(url), policy=policy,
                                   headers={str(k): str(v) for k, v in headers.items()},
                                   content=None if body is None else str(body))
            return {"status": response.status, "url": response.url,
                    "contentType": response.headers.get("content-type", ""),
                    "text": response.text()[:FETCH_TEXT_CHARS], "truncated": response.truncated}

        offered["fetch"] = fetch_url
    return _budgeted(offered, config.max_calls)


def _budgeted(offered: Callbacks, budget: int) -> Callbacks:
    calls = 0

    def spend() -> None:
        nonlocal calls
        calls += 1
        if calls > budget:
            raise CallBudgetExceeded(f"this code may make at most {budget} skilldesk calls per run")

    def counted(function: Callable[..., Any]) -> Callable[..., Any]:
        # The sandbox runs async callbacks on the loop and plain ones in a thread: keep each kind.
        if inspect.iscoroutinefunction(function):
            async def counted_async(*args: Any) -> Any:
                spend()
                return await function(*args)

            return counted_async

        def counted_sync(*args: Any) -> Any:
            spend()
            return function(*args)

        return counted_sync

    return {name: counted(function) for name, function in offered.items()}


def describe_tool(config: Config) -> str:
    """Tell the model what the code may use, from the callbacks this configuration offers."""
    lines = [
        "Run JavaScript you write for a task (calculations, transforming data). The code is the body of an "
        "async function: `return` the result (JSON values); console.log output comes back too. There is no "
        "require, process, file system or network, except these functions:",
    ]
    if config.read_tables:
        lines.append("- await skilldesk.tables() lists the data tables you may read, with their fields.")
        lines.append("- await skilldesk.query(table, {search, filters: [{field, op, value}], sort, limit}) "
                     "returns rows; op is eq, ne, contains, lt, le, gt, ge, empty or set; sort '-field' "
                     "sorts descending.")
    if config.insert_rows:
        lines.append("- await skilldesk.insert(table, {field: value, ...}) adds a row and returns it.")
    if config.allow_fetch:
        lines.append("- await skilldesk.fetch(url, {method, headers, body}) returns {status, url, "
                     "contentType, text}; internal addresses are refused.")
    if len(lines) == 1:
        lines[0] = lines[0].replace(", except these functions:", ".")
    return "\n".join(lines)


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    limits = SandboxLimits(timeout=config.timeout_seconds, max_memory=config.max_memory_mb * MB)
    app_policy = policy_from_config(ctx.app.config) if config.allow_fetch else OutboundPolicy()
    policy = replace(app_policy, timeout=min(app_policy.timeout, config.timeout_seconds))

    async def run_javascript(run: RunContext[Any], code: str) -> Any:
        """Run the code.

        Args:
            code: The body of an async JavaScript function; `return` the result.
        """
        callbacks = callbacks_for(config, ctx, policy, ctx.run_id)
        try:
            result = await run_script(code, limits=limits, callbacks=callbacks)
        except (ScriptError, SandboxTimeout, SandboxMemoryExceeded) as error:
            logs = getattr(error, "logs", None)
            message = f"The JavaScript failed: {error}" + (f"\nconsole: {logs[-20:]}" if logs else "")
            if run.retry == 0:  # one retry with the error, then a plain failure
                raise ModelRetry(f"{message}\nFix the code and call run_javascript again.") from error
            raise ToolFailed(f"{message}\nIt failed again after one retry.") from error
        return {"result": result.value, "console": result.logs} if result.logs else result.value

    tool = Tool(run_javascript, name="run_javascript", description=describe_tool(config), max_retries=1)
    return FunctionToolset([tool])


skill = Skill(name="generated_code", title="Generate and run JavaScript", config=Config, build=build,
              description=__doc__.strip().splitlines()[0])
