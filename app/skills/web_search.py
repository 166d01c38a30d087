"""Web search: the model's own search where its provider has one, else SearXNG, DuckDuckGo, Tavily or Brave.

Results carry their URLs (title, url, snippet) so answers can cite them. A search that fails (no network,
a missing key, a refused address) is a failed tool result that says why; it never ends the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

import httpx2
from ddgs import DDGS
from ddgs.exceptions import DDGSException
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_ai import Tool
from pydantic_ai.capabilities import WebSearch
from pydantic_ai.exceptions import ModelRetry, ToolFailed

from app.guards.html_text import html_to_text
from app.guards.outbound import OutboundPolicy, OutboundRefused, fetch, policy_from_config
from app.runtime.contract import Skill, SkillContext

Backend = Literal["duckduckgo", "searxng", "tavily", "brave"]
BACKEND_NAMES = {"duckduckgo": "DuckDuckGo", "searxng": "SearXNG", "tavily": "Tavily", "brave": "Brave"}
DEFAULT_KEY_ENV = {"tavily": "TAVILY_API_KEY", "brave": "BRAVE_API_KEY"}
TAVILY_URL = "https://api.tavily.com/search"
BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
SNIPPET_CHARS = 500
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

DESCRIPTION = (
    "Search the web. Returns results with title, url and snippet; cite the urls of the results you use "
    "in your answer."
)


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    backend: Backend = Field("duckduckgo", title="Search backend")
    """Search engine the tool uses when the model has no web search of its own."""
    native: bool = Field(True, title="Use the provider's own search")
    """Use the model provider's own web search where the model has one (the backend is then not used)."""
    searxng_url: str = Field("", max_length=300, title="SearXNG address")
    """Address of your SearXNG instance, with the JSON format enabled (e.g. https://search.example.org)."""
    api_key_env: str = Field("", max_length=100, title="API key variable")
    """Environment variable holding the Tavily or Brave API key (empty: TAVILY_API_KEY or BRAVE_API_KEY)."""
    max_results: int = Field(5, ge=1, le=20, title="Results per search")
    """Results one search returns at most."""
    timeout_seconds: float = Field(10.0, gt=0, le=60, title="Time limit (seconds)")
    """Seconds one search may take; OUTBOUND_TIMEOUT_SECONDS caps it too."""

    @field_validator("searxng_url")
    @classmethod
    def http_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        parts = urlsplit(value)
        if value and (parts.scheme not in ("http", "https") or not parts.hostname):
            raise ValueError("Give the full address, starting with https:// (or http://).")
        return value

    @field_validator("api_key_env")
    @classmethod
    def variable_name(cls, value: str) -> str:
        value = value.strip()
        if value and not _ENV_NAME.fullmatch(value):
            raise ValueError("Give the name of an environment variable (letters, digits, _), not the key.")
        return value

    @model_validator(mode="after")
    def backend_settings(self) -> Config:
        if self.backend == "searxng" and not self.searxng_url:
            raise ValueError("The SearXNG backend needs the address of a SearXNG instance.")
        return self


class Search:
    """The local search tool: one backend, the guarded client for HTTP, failures as plain messages."""

    def __init__(self, config: Config, policy: OutboundPolicy) -> None:
        self.config = config
        self.policy = replace(policy, timeout=min(policy.timeout, config.timeout_seconds))
        self.name = BACKEND_NAMES[config.backend]

    async def __call__(self, query: str) -> list[dict[str, str]] | str:
        """Search the web.

        Args:
            query: The words to search for, as you would type them into a search engine.
        """
        query = " ".join(query.split())
        if not query:
            raise ModelRetry("Give the words to search for.")
        backend = getattr(self, f"_{self.config.backend}")
        try:
            results = await backend(query)
        except OutboundRefused as refused:
            raise ToolFailed(f"The search was refused: {refused}") from refused
        except (httpx2.HTTPError, TimeoutError, OSError) as error:
            reason = str(error) or type(error).__name__
            raise ToolFailed(f"The web search could not reach {self.name}: {reason}. "
                             "The server may have no network access.") from error
        if not results:
            return f"{self.name} found nothing for {query!r}."
        return results[: self.config.max_results]

    async def _duckduckgo(self, query: str) -> list[dict[str, str]]:
        # ddgs makes its own requests to DuckDuckGo's fixed endpoints (never to a URL a model chose).
        client = DDGS(timeout=max(1, round(self.policy.timeout)))
        try:
            async with asyncio.timeout(self.policy.timeout + 1):
                found = await asyncio.to_thread(client.text, query, max_results=self.config.max_results,
                                                backend="duckduckgo")
        except DDGSException as error:
            if "no results" in str(error).lower():
                return []
            raise ToolFailed(f"The web search could not reach DuckDuckGo: {error}. "
                             "The server may have no network access.") from error
        return [_result(item.get("title"), item.get("href"), item.get("body")) for item in found]

    async def _searxng(self, query: str) -> list[dict[str, str]]:
        url = f"{self.config.searxng_url}/search?{urlencode({'q': query, 'format': 'json'})}"
        body = await self._get_json("GET", url, headers={"Accept": "application/json"})
        return [_result(item.get("title"), item.get("url"), item.get("content"))
                for item in body.get("results") or []]

    async def _tavily(self, query: str) -> list[dict[str, str]]:
        headers = {"Authorization": f"Bearer {self._key()}"}
        body = await self._get_json("POST", TAVILY_URL, headers=headers,
                                    json={"query": query, "max_results": self.config.max_results})
        return [_result(item.get("title"), item.get("url"), item.get("content"))
                for item in body.get("results") or []]

    async def _brave(self, query: str) -> list[dict[str, str]]:
        url = f"{BRAVE_URL}?{urlencode({'q': query, 'count': self.config.max_results})}"
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key()}
        body = await self._get_json("GET", url, headers=headers)
        return [_result(item.get("title"), item.get("url"), item.get("description"))
                for item in (body.get("web") or {}).get("results") or []]

    def _key(self) -> str:
        variable = self.config.api_key_env or DEFAULT_KEY_ENV[self.config.backend]
        key = os.environ.get(variable)  # read per call, so a rotated key applies without a restart
        if not key:
            raise ToolFailed(f"Web search with {self.name} needs an API key: an admin must set the "
                             f"environment variable {variable}.")
        return key

    async def _get_json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        response = await fetch(method, url, policy=self.policy, **kwargs)
        if response.status != 200:
            hint = " (enable the json format in its settings.yml)" if self.config.backend == "searxng" else ""
            raise ToolFailed(f"{self.name} answered HTTP {response.status}{hint}.")
        try:
            body = json.loads(response.body)
        except ValueError as error:
            raise ToolFailed(f"{self.name} did not answer with JSON.") from error
        if not isinstance(body, dict):
            raise ToolFailed(f"{self.name} answered JSON of an unexpected shape.")
        return body


def _result(title: Any, url: Any, snippet: Any) -> dict[str, str]:
    # Snippets may carry markup (<strong> around the matched words): keep the words.
    return {"title": str(title or "").strip(), "url": str(url or ""),
            "snippet": html_to_text(str(snippet or ""), SNIPPET_CHARS)}


def build(config: Config, ctx: SkillContext) -> WebSearch:
    search = Search(config, policy_from_config(ctx.app.config))
    local = Tool(search.__call__, name="web_search", description=DESCRIPTION)
    return WebSearch(native=config.native, local=local)


skill = Skill(name="web_search", title="Web search", config=Config, build=build,
              description=__doc__.strip().splitlines()[0])
