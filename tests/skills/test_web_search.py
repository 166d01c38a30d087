"""The web search skill in real runs: SearXNG on a real local server, plain failures, native search."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError
from pydantic_ai.native_tools import WebSearchTool

from app.skills.web_search import Config
from tests.local_http import QuietHandler, serving
from tests.skill_chat import Script, chat, scripted

RESULTS = {
    "query": "skilldesk",
    "results": [
        {"title": "Skilldesk documentation", "url": "https://docs.example.org/skilldesk",
         "content": "How to compose <strong>agents</strong> from skills.", "engine": "brave"},
        {"title": "Skilldesk on GitHub", "url": "https://code.example.org/skilldesk",
         "content": "Source code."},
    ],
}


class SearXNG(QuietHandler):
    """Answers /search?q=...&format=json the way a SearXNG instance does."""

    queries: list[dict[str, list[str]]] = []

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != "/search":
            self.send_error(404)
            return
        SearXNG.queries.append(parse_qs(parts.query))
        self.reply(json.dumps(RESULTS).encode(), "application/json")


@pytest.fixture(scope="module")
def searxng() -> Iterator[str]:
    """A SearXNG-shaped JSON search server on 127.0.0.1; yields its address."""
    with serving(SearXNG) as httpd:
        yield f"http://127.0.0.1:{httpd.server_port}"


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def network_reachable() -> bool:
    try:
        socket.getaddrinfo("html.duckduckgo.com", 443)
    except OSError:
        return False
    return True


def said(step: dict) -> str:
    """Return what a tool step returned; a failed result is stored as {"error": "..."}."""
    return json.loads(step["result"])["error"] if step["failed"] else step["result"]


SEARCH = [("web_search", {"query": "skilldesk"})]


def test_searxng_results_carry_urls_that_the_answer_cites(app, client, auth, scripted_model, searxng):
    auth.login_as("user")
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the test's SearXNG runs on loopback
    SearXNG.queries.clear()
    script = Script(SEARCH)
    settings = {"backend": "searxng", "searxng_url": searxng + "/", "native": False}

    run, message = chat(app, client, "web_search", settings, model_id=scripted(scripted_model, script))

    assert run.status == "succeeded", run.error
    assert SearXNG.queries == [{"q": ["skilldesk"], "format": ["json"]}]
    [step] = message.steps
    assert not step["failed"]
    assert json.loads(step["result"]) == [
        {"title": "Skilldesk documentation", "url": "https://docs.example.org/skilldesk",
         "snippet": "How to compose agents from skills."},
        {"title": "Skilldesk on GitHub", "url": "https://code.example.org/skilldesk",
         "snippet": "Source code."},
    ]
    assert "https://docs.example.org/skilldesk" in message.content
    [tool] = script.infos[0].function_tools
    assert tool.name == "web_search" and "cite the urls" in tool.description


def test_the_offline_model_has_no_native_search_so_it_gets_the_local_tool(app, client, auth, searxng):
    auth.login_as("user")
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    SearXNG.queries.clear()

    run, message = chat(app, client, "web_search", {"backend": "searxng", "searxng_url": searxng},
                        text='Search the web for "skilldesk"')

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["name"] == "web_search" and not step["failed"]
    assert SearXNG.queries[0]["q"] == ["skilldesk"]
    assert "https://docs.example.org/skilldesk" in message.content and "Offline model" in message.content


def test_a_model_with_native_search_gets_the_native_tool_instead(app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script()  # FunctionModel claims every native tool, as a provider with web search would

    run, _message = chat(app, client, "web_search", {"backend": "duckduckgo"},
                         model_id=scripted(scripted_model, script))

    assert run.status == "succeeded", run.error
    info = script.infos[0]
    assert info.function_tools == []
    assert [type(tool) for tool in info.model_request_parameters.native_tools] == [WebSearchTool]


def test_an_address_off_the_allow_list_is_a_plain_failure(app, client, auth, scripted_model, searxng):
    auth.login_as("user")

    run, message = chat(app, client, "web_search", {"backend": "searxng", "searxng_url": searxng, "native": False},
                        model_id=scripted(scripted_model, Script(SEARCH)))

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["failed"] and said(step).startswith("The search was refused: refused http://127.0.0.1:")


def test_an_unreachable_server_is_a_plain_failure(app, client, auth, scripted_model, closed_port):
    auth.login_as("user")
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    settings = {"backend": "searxng", "searxng_url": f"http://127.0.0.1:{closed_port}", "native": False}

    run, message = chat(app, client, "web_search", settings, model_id=scripted(scripted_model, Script(SEARCH)))

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["failed"] and said(step).startswith("The web search could not reach SearXNG:")
    assert "could not reach SearXNG" in message.content  # the model was told, and said so


@pytest.mark.skipif(network_reachable(), reason="this checks the path where the server has no network")
@pytest.mark.parametrize(("backend", "name"), [("duckduckgo", "DuckDuckGo"), ("brave", "Brave")])
def test_without_network_the_tool_reports_the_failure_plainly(app, client, auth, scripted_model, monkeypatch,
                                                             backend, name):
    auth.login_as("user")
    monkeypatch.setenv("SKILLDESK_TEST_BRAVE_KEY", "not-a-real-key")
    settings = {"backend": backend, "native": False, "timeout_seconds": 3,
                "api_key_env": "SKILLDESK_TEST_BRAVE_KEY"}

    run, message = chat(app, client, "web_search", settings, model_id=scripted(scripted_model, Script(SEARCH)))

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["failed"] and said(step).startswith(f"The web search could not reach {name}:")
    assert "The server may have no network access." in said(step)


def test_a_missing_api_key_says_which_variable_to_set(app, client, auth, scripted_model, monkeypatch):
    auth.login_as("user")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)

    run, message = chat(app, client, "web_search", {"backend": "tavily", "native": False},
                        model_id=scripted(scripted_model, Script(SEARCH)))

    [step] = message.steps
    assert step["failed"]
    assert said(step) == ("Web search with Tavily needs an API key: an admin must set the environment "
                          "variable TAVILY_API_KEY.")


def test_settings_need_a_searxng_address_and_a_variable_name():
    with pytest.raises(ValidationError, match="needs the address of a SearXNG instance"):
        Config(backend="searxng")
    with pytest.raises(ValidationError, match="starting with https://"):
        Config(backend="searxng", searxng_url="search.example.org")
    with pytest.raises(ValidationError, match="name of an environment variable"):
        Config(backend="brave", api_key_env="sk-live-123")
    assert Config(backend="searxng", searxng_url="https://search.example.org/").searxng_url == (
        "https://search.example.org")
