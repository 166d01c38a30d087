"""The HTTP request skill in real agent runs: refused addresses and redirects, caps, methods, HTML as text."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest
from pydantic import ValidationError

from app.skills.http_request import Config
from tests.local_http import QuietHandler, serving
from tests.skill_chat import Script, chat, scripted

RELEASE = threading.Event()  # set at teardown, so the slow handler stops waiting
PAGE = b"""<!doctype html><html><head><title>Opening hours</title><style>p {color: red}</style>
<script>var secret = "not for the model";</script></head>
<body><nav>Home | About</nav><h1>Opening hours</h1><p>We open at <b>9</b> every day.
See <a href="/prices">the prices</a>.</p></body></html>"""


class Site(QuietHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        Site.hits.append(self.path)
        path, _, query = self.path.partition("?")
        if path == "/page":
            self.reply(PAGE, "text/html; charset=utf-8")
        elif path == "/redirect":
            self.send_response(302)
            self.send_header("Location", parse_qs(query)["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/big":
            self.reply(b"x" * 50_000, "text/plain")
        elif path == "/slow":
            RELEASE.wait(3)
            try:
                self.reply(b"too late", "text/plain")
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        Site.hits.append(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply(b"POST " + self.headers["Content-Type"].encode() + b" " + body, "text/plain")



@pytest.fixture(scope="module")
def site() -> Iterator[int]:
    """A small site on 127.0.0.1; yields its port."""
    RELEASE.clear()
    with serving(Site) as httpd:
        yield httpd.server_port
        RELEASE.set()


def said(step: dict) -> str:
    """Return what a tool step returned; a failed result is stored as {"error": "..."}."""
    return json.loads(step["result"])["error"] if step["failed"] else step["result"]


def fetches(*urls: str, **extra) -> list[tuple[str, dict]]:
    return [("http_request", {"url": url, **extra}) for url in urls]


def test_internal_addresses_are_refused_inside_a_run(app, client, auth, scripted_model, site):
    auth.login_as("user")
    Site.hits.clear()
    urls = [
        f"http://127.0.0.1:{site}/page", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/",
        f"http://[::1]:{site}/page", f"http://[::ffff:127.0.0.1]:{site}/page", f"http://0x7f000001:{site}/page",
        f"http://2130706433:{site}/page", f"http://017700000001:{site}/page",
        f"http://localhost:{site}/page",  # a host name that resolves to a private address
    ]

    script = Script(fetches(*urls))

    run, message = chat(app, client, "http_request", {}, model_id=scripted(scripted_model, script))

    assert run.status == "succeeded", run.error
    [tool] = script.infos[0].function_tools
    assert tool.name == "http_request" and "Methods allowed: GET." in tool.description
    assert list(tool.parameters_json_schema["properties"]) == ["url", "method", "body", "content_type"]
    assert [step["args"] for step in message.steps] == [f'{{"url":"{url}"}}' for url in urls]
    for step in message.steps:
        assert step["failed"], step
        assert said(step).startswith("Refused: refused http") and "off limits to tools" in said(step)
    results = {step["args"]: said(step) for step in message.steps}
    assert "cloud metadata address" in results['{"url":"http://169.254.169.254/latest/meta-data/"}']
    assert "localhost resolves to" in results[f'{{"url":"http://localhost:{site}/page"}}']
    assert Site.hits == []  # nothing reached the site, although it was listening on 127.0.0.1


def test_a_redirect_from_an_allowed_host_to_a_refused_one_is_refused(app, client, auth, scripted_model, site):
    auth.login_as("user")
    Site.hits.clear()
    page, to_metadata, to_private = (f"http://127.0.0.1:{site}/page",
                                     f"http://127.0.0.1:{site}/redirect?to=http://169.254.169.254/latest/",
                                     f"http://127.0.0.1:{site}/redirect?to=http://10.0.0.1/admin")

    run, message = chat(app, client, "http_request", {"allowed_hosts": ["127.0.0.1"]},
                        model_id=scripted(scripted_model, Script(fetches(page, to_metadata, to_private))))

    assert run.status == "succeeded", run.error
    fetched, metadata, private = message.steps
    assert not fetched["failed"]
    # The page came back as readable text: title and paragraph kept, script, style and nav dropped,
    # the link's URL made absolute.
    assert fetched["result"].startswith(f"HTTP 200 from {page} · text/html")
    assert "We open at 9 every day." in fetched["result"] and "# Opening hours" in fetched["result"]
    assert f"http://127.0.0.1:{site}/prices" in fetched["result"]
    assert "not for the model" not in fetched["result"] and "color: red" not in fetched["result"]
    assert "Home | About" not in fetched["result"]
    assert metadata["failed"] and "169.254.169.254 is off limits" in said(metadata)
    assert private["failed"] and "10.0.0.1 is off limits" in said(private)
    assert sorted(Site.hits) == ["/page", "/redirect?to=http://10.0.0.1/admin",
                                 "/redirect?to=http://169.254.169.254/latest/"]


def test_the_app_allow_list_applies_and_the_skill_list_adds_to_it(app, client, auth, scripted_model, site):
    auth.login_as("user")
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"

    run, message = chat(app, client, "http_request", {},
                        model_id=scripted(scripted_model, Script(fetches(f"http://127.0.0.1:{site}/page"))))

    assert not message.steps[0]["failed"] and "We open at 9" in message.steps[0]["result"]


def test_size_and_time_caps_apply(app, client, auth, scripted_model, site):
    auth.login_as("user")
    settings = {"allowed_hosts": ["127.0.0.1"], "max_bytes": 2_000, "max_chars": 500, "timeout_seconds": 0.5}

    script = Script(fetches(f"http://127.0.0.1:{site}/big", f"http://127.0.0.1:{site}/slow"))

    run, message = chat(app, client, "http_request", settings, model_id=scripted(scripted_model, script))

    big, slow = message.steps
    assert "2,000 bytes (cut at the size limit)" in big["result"]
    assert len(big["result"].split("\n\n", 1)[1]) == 500 and big["result"].endswith("…")
    assert slow["failed"] and "took longer than 0.5 s" in said(slow)


def test_only_the_allowed_methods_may_be_used(app, client, auth, scripted_model, site):
    auth.login_as("user")
    url = f"http://127.0.0.1:{site}/echo"
    post = ("http_request", {"url": url, "method": "POST", "body": '{"a": 1}',
                             "content_type": "application/json"})

    _run, refused = chat(app, client, "http_request", {"allowed_hosts": ["127.0.0.1"]},
                         model_id=scripted(scripted_model, Script([post])))
    _run, sent = chat(app, client, "http_request", {"allowed_hosts": ["127.0.0.1"], "methods": ["GET", "POST"]},
                      model_id=scripted(scripted_model, Script([post])))

    assert refused.steps[0]["failed"]
    assert "Method POST is not allowed here; use one of: GET." in refused.content
    assert not sent.steps[0]["failed"]
    assert sent.steps[0]["result"].endswith('POST application/json {"a": 1}')


def test_settings_refuse_a_bad_host_entry_and_unknown_methods():
    with pytest.raises(ValidationError, match="not a valid CIDR"):
        Config(allowed_hosts=["10.0.0.0/33"])
    with pytest.raises(ValidationError):
        Config(methods=["CONNECT"])
    assert Config(methods=["GET", "GET", "POST"]).methods == ["GET", "POST"]

