"""HTTP request: fetch a web page or call an HTTP API through the guarded client; HTML comes back as text.

Every request, and every redirect hop, goes through app.guards.outbound: loopback, private, link-local and
metadata addresses are refused unless OUTBOUND_ALLOWED_HOSTS or this skill's own list names them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Literal

import httpx2
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import ModelRetry, Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.guards.html_text import html_to_text
from app.guards.outbound import OutboundPolicy, OutboundRefused, OutboundResponse, fetch, policy_from_config
from app.runtime.contract import Skill, SkillContext, mutation

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "+json", "+xml")


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    methods: list[Method] = Field(["GET"], min_length=1, title="Allowed methods")
    """HTTP methods the agent may use, one per line (GET, HEAD, POST, PUT, PATCH, DELETE)."""
    allowed_hosts: list[str] = Field([], title="Also allow these private hosts")
    """Private hosts, IPs or CIDR networks this skill may reach anyway, one per line (on top of the app's)."""
    max_chars: int = Field(20_000, ge=500, le=200_000, title="Text given to the model (characters)")
    """Characters of the response's text given to the model; the rest is cut."""
    max_bytes: int = Field(1_000_000, ge=1_000, le=50_000_000, title="Largest response (bytes)")
    """Bytes read from a response at most; OUTBOUND_MAX_BYTES caps it too."""
    timeout_seconds: float = Field(15.0, gt=0, le=120, title="Time limit (seconds)")
    """Seconds one request may take, redirects included; OUTBOUND_TIMEOUT_SECONDS caps it too."""

    @field_validator("methods")
    @classmethod
    def no_repeats(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("allowed_hosts")
    @classmethod
    def valid_hosts(cls, value: list[str]) -> list[str]:
        hosts = [host.strip() for host in value if host.strip()]
        OutboundPolicy(allowed_hosts=frozenset(hosts))  # raises ValueError naming a bad entry
        return hosts


def skill_policy(app_policy: OutboundPolicy, config: Config) -> OutboundPolicy:
    """Combine the app's policy with the skill's: allow-lists add up, caps take the stricter value."""
    return replace(app_policy, allowed_hosts=app_policy.allowed_hosts | frozenset(config.allowed_hosts),
                   timeout=min(app_policy.timeout, config.timeout_seconds),
                   max_bytes=min(app_policy.max_bytes, config.max_bytes))


def describe(response: OutboundResponse, method: str, max_chars: int) -> str:
    """Say what came back: status, final URL and type, then the body as readable text."""
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    size = f"{len(response.body):,} bytes" + (" (cut at the size limit)" if response.truncated else "")
    head = f"HTTP {response.status} from {response.url} · {content_type or 'no content type'} · {size}"
    if method == "HEAD" or not response.body:
        return head
    if "html" in content_type:
        body = html_to_text(response.text(), max_chars, base_url=response.url)
    elif "json" in content_type and not response.truncated:
        try:
            body = json.dumps(json.loads(response.body), indent=1, ensure_ascii=False)
        except ValueError:
            body = response.text()
    elif any(kind in content_type for kind in TEXT_TYPES) or not content_type:
        body = response.text()
    else:
        return f"{head}\n\n[{content_type} content is not shown]"
    if len(body) > max_chars:
        body = body[: max_chars - 1] + "…"
    return f"{head}\n\n{body}"


READ_METHODS = ("GET", "HEAD")


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    policy = skill_policy(policy_from_config(ctx.app.config), config)
    allowed = ", ".join(config.methods)

    async def http_request(url: str, method: str = "GET", body: str | None = None,
                           content_type: str | None = None) -> str:
        """Send one HTTP request.

        Args:
            url: The full http:// or https:// address.
            method: The HTTP method.
            body: The request body, for methods that take one.
            content_type: The body's media type, such as application/json.
        """
        method = method.upper().strip()
        if method not in config.methods:
            raise ModelRetry(f"Method {method} is not allowed here; use one of: {allowed}.")
        if body is not None and method in ("GET", "HEAD"):
            raise ModelRetry(f"A {method} request takes no body; put parameters in the URL.")
        headers = {"Content-Type": content_type} if content_type and body is not None else None
        try:
            response = await fetch(method, url, policy=policy, headers=headers, content=body)
        except OutboundRefused as refused:
            raise ToolFailed(f"Refused: {refused}") from refused
        except httpx2.HTTPError as error:
            raise ToolFailed(f"Could not fetch {url}: {str(error) or type(error).__name__}") from error
        return describe(response, method, config.max_chars)

    description = (
        "Fetch a web page or call an HTTP API (fetch page, download, GET a URL). HTML pages come back as "
        f"readable text with link URLs kept. Methods allowed: {allowed}. Private and internal addresses "
        "are refused."
    )
    # A request other than GET or HEAD sends something out: it changes state elsewhere and may destroy it.
    sends = any(method not in READ_METHODS for method in config.methods)
    metadata = mutation("send", "request", destructive=True, unless={"method": list(READ_METHODS)}) if sends else {}
    return FunctionToolset([Tool(http_request, name="http_request", description=description, metadata=metadata)])


skill = Skill(name="http_request", title="HTTP request / fetch page", config=Config, build=build,
              description=__doc__.strip().splitlines()[0])
