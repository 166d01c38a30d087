"""MCP: connect the agent to a Model Context Protocol server, over stdio or streamable HTTP.

pydantic-ai's `MCPToolset` is the client; its filtered and prefixed wrappers apply the allowed-tools
list and the tool prefix. The toolset is built inside the run, on the runtime loop, because an MCP
session belongs to the event loop that opened it; a stdio server lives as long as the run.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import TYPE_CHECKING, Any, Literal

import httpx2
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_ai import RunContext
from pydantic_ai.toolsets import AbstractToolset, DynamicToolset

from app.guards.credentials import ENV_NAME, HeaderLines, MissingSecret, fill_headers
from app.guards.outbound import guarded_async_client, policy_from_config
from app.runtime.contract import Skill, SkillContext

if TYPE_CHECKING:
    from pydantic_ai.mcp import MCPToolset

PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,29}$")


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    transport: Literal["http", "stdio"] = Field("http", title="Transport")
    """http: connect to a streamable-HTTP server by its URL. stdio: Skilldesk starts the server as a
    process."""

    url: str = Field("", max_length=300, title="URL", validate_default=True)
    """HTTP only: the server's address, such as https://mcp.example.com/mcp."""

    headers: HeaderLines = Field(default_factory=list, title="Headers")
    """HTTP only: one header per line, as Name: value. Write {env:NAME} for a server environment variable
    and {credential:NAME} for the user's own saved credential, for example
    Authorization: Bearer {credential:github}."""

    command: str = Field("", max_length=300, title="Command", validate_default=True)
    """stdio only: the program that runs the server, such as npx or /usr/bin/python3."""

    args: list[str] = Field(default_factory=list, title="Arguments")
    """stdio only: the command's arguments, one per line."""

    env: list[str] = Field(default_factory=list, title="Environment variables")
    """stdio only: names of environment variables passed from Skilldesk's environment to the server, one per
    line. Nothing else of the environment is passed on but the basics (PATH, HOME, ...)."""

    allowed_tools: list[str] = Field(default_factory=list, title="Allowed tools")
    """Optional. The server's tools the agent may use, one name per line (as the server names them).
    Empty allows them all."""

    tool_prefix: str = Field("", max_length=30, title="Tool prefix")
    """Optional. Put before every tool name (prefix_toolname), to tell servers apart or avoid clashes."""

    timeout: float = Field(30.0, ge=1, le=600, title="Timeout")
    """Seconds to wait for the server to start, and for each of its answers."""

    @field_validator("env")
    @classmethod
    def env_names(cls, value: list[str]) -> list[str]:
        names = [name.strip() for name in value if name.strip()]
        for name in names:
            if not ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name "
                                 "(letters, digits, underscores).")
        return names

    @field_validator("args", "allowed_tools")
    @classmethod
    def non_empty_lines(cls, value: list[str]) -> list[str]:
        return [line.strip() for line in value if line.strip()]

    @field_validator("tool_prefix")
    @classmethod
    def valid_prefix(cls, value: str) -> str:
        value = value.strip()
        if value and not PREFIX.match(value):
            raise ValueError("Start with a letter; use letters, digits and underscores (at most 30).")
        return value

    @field_validator("url")
    @classmethod
    def url_for_http(cls, value: str, info: ValidationInfo) -> str:
        value = value.strip()
        if info.data.get("transport") == "http" and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("Give the server's URL, starting with http:// or https://.")
        return value

    @field_validator("command")
    @classmethod
    def command_for_stdio(cls, value: str, info: ValidationInfo) -> str:
        value = value.strip()
        if info.data.get("transport") == "stdio" and not value:
            raise ValueError("Give the command that starts the server.")
        return value


def _stdio_toolset(config: Config) -> MCPToolset:
    # Imported here for laziness: the MCP client stack costs ~0.8 s at start and only MCP skills use it.
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    missing = [name for name in config.env if not os.environ.get(name)]
    if missing:
        raise MissingSecret(f"The MCP server needs the environment variable {', '.join(missing)}, "
                            "which is not set on the Skilldesk server; an admin must set it.")
    transport = StdioTransport(config.command, list(config.args), env={n: os.environ[n] for n in config.env},
                               keep_alive=False)
    return MCPToolset(transport, tool_error_behavior="failed", init_timeout=config.timeout,
                      read_timeout=config.timeout)


def _http_toolset(config: Config, ctx: SkillContext) -> AbstractToolset[Any]:
    policy = policy_from_config(ctx.app.config)

    def resolve_headers() -> dict[str, str]:
        with ctx.app_context():
            return fill_headers(config.headers, ctx.user_id)

    def guarded_client(**options: Any) -> httpx2.AsyncClient:
        # The MCP client calls this for each session: every connection it opens, redirects included,
        # goes to an address the guard resolved and checked itself, never to a second lookup.
        return guarded_async_client(policy, **options)

    async def connect(_run: RunContext[Any]) -> MCPToolset:
        from fastmcp.client.transports import StreamableHttpTransport  # lazily, as in _stdio_toolset
        from pydantic_ai.mcp import MCPToolset

        # Once per run: the user's secrets are filled in, then the session opens through the guard.
        headers = await asyncio.to_thread(resolve_headers)
        transport = StreamableHttpTransport(config.url, headers=headers, httpx_client_factory=guarded_client)
        return MCPToolset(transport, tool_error_behavior="failed", init_timeout=config.timeout,
                          read_timeout=config.timeout)

    return DynamicToolset(connect, per_run_step=False)


def build(config: Config, ctx: SkillContext) -> AbstractToolset[Any]:
    toolset: AbstractToolset[Any] = _stdio_toolset(config) if config.transport == "stdio" \
        else _http_toolset(config, ctx)
    if config.allowed_tools:
        allowed = frozenset(config.allowed_tools)
        toolset = toolset.filtered(lambda _run, tool: tool.name in allowed)
    if config.tool_prefix:
        toolset = toolset.prefixed(config.tool_prefix)
    return toolset


def declared_tools(config: Config) -> list[str]:
    """Return the tool names known without connecting: the allowed tools, prefixed (all others come later)."""
    return [f"{config.tool_prefix}_{name}" if config.tool_prefix else name for name in config.allowed_tools]


skill = Skill(name="mcp", title="MCP server", config=Config, build=build, declared_tools=declared_tools,
              description="Connect the agent to an MCP server's tools, over stdio or streamable HTTP.")
