"""Browser tests: Debian's chromium through Playwright, against the app served on 127.0.0.1 in a thread.

When /usr/bin/chromium is not installed the whole directory is left out, and the run ends with one line
saying how many tests that is and the command that installs it (`apt-get install -y chromium
chromium-driver`); `playwright install` is never needed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from playwright.sync_api import expect
from werkzeug.serving import BaseWSGIServer, make_server

from app import create_app
from app.extensions import db

# Debian's chromium; SKILLDESK_TEST_CHROMIUM names another binary (the test of a missing chromium names none).
CHROMIUM = Path(os.environ.get("SKILLDESK_TEST_CHROMIUM", "/usr/bin/chromium"))
HERE = Path(__file__).parent
SCREENSHOTS = Path(__file__).parents[2] / "docs" / "screenshots"
# How long an expectation may wait for the page to get there (Playwright's default is 5 s): generous, since
# the suite runs its passes side by side on two cores. A wait, never a speed assertion.
EXPECT_TIMEOUT_MS = 20_000
expect.set_options(timeout=EXPECT_TIMEOUT_MS)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


INSTALL = "apt-get install -y chromium chromium-driver"
MISSING = pytest.StashKey[int]()


def pytest_collection_modifyitems(config, items) -> None:
    """Mark every test of this directory `browser`; leave them all out when chromium is missing.

    Left out, not skipped one by one: the run then ends with one line saying how many and how to install
    chromium (`pytest_terminal_summary`; scripts/test.sh repeats it as the last line of `make test`).
    """
    browser = [item for item in items if HERE in Path(str(item.path)).parents]
    for item in browser:
        item.add_marker(pytest.mark.browser)
    if browser and not CHROMIUM.exists():
        items[:] = [item for item in items if item not in set(browser)]
        config.hook.pytest_deselected(items=browser)
        config.stash[MISSING] = len(browser)


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Say in one line that the browser tests did not run, and the command that installs chromium."""
    missing = config.stash.get(MISSING, 0)
    if missing:
        line = (f"{missing} browser test{'s' if missing != 1 else ''} skipped: {CHROMIUM} is not installed; "
                f"install it with: {INSTALL}")
        terminalreporter.write_line(line, yellow=True, bold=True)
        notes = os.environ.get("SKILLDESK_TEST_NOTES")
        if notes:  # scripts/test.sh prints it again at the very end of `make test`
            Path(notes).write_text(line + "\n")


@pytest.fixture(scope="session")
def base_url() -> None:
    """No base URL: tests use `live_server.url`. (Replaces pytest-playwright's fallback fixture, a method
    that pytest 9 warns about, and warnings are errors here.)"""
    return None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """Launch Debian's chromium, headless, without the background traffic it would otherwise try."""
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "headless": True,
            "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}}


class LiveServer:
    """The app served by werkzeug in a thread; `restart()` serves a new app on the same database and port."""

    def __init__(self, settings: dict) -> None:
        self.settings = settings
        self.port = 0
        self.app: Flask | None = None
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Create the app and serve it (on the port of the previous server, if there was one)."""
        self.app = create_app(dict(self.settings))
        self._server = make_server("127.0.0.1", self.port, self.app, threaded=True)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="live-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving; requests in progress finish, new connections are refused."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(10)
            self._server = None
            with self.app.app_context():
                db.engine.dispose()

    def restart(self) -> None:
        """Stop, then serve a freshly created app on the same database and port (as after a deploy)."""
        self.stop()
        self.start()


@pytest.fixture
def live_server(app: Flask, settings: dict) -> Iterator[LiveServer]:
    """Skilldesk on 127.0.0.1 with CSRF on and jobs inline; the database is the test database.

    It depends on `app` for the database's life cycle: defaults before the test, emptied after it.
    """
    server = LiveServer({**settings, "WTF_CSRF_ENABLED": True, "JOBS_IMMEDIATE": True})
    yield server
    server.stop()


@pytest.fixture
def screenshot():
    """Save a README screenshot when SKILLDESK_SCREENSHOTS=1 (docs/screenshots/<name>.png, 1280x800)."""

    def take(page, name: str) -> None:
        if os.environ.get("SKILLDESK_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))

    return take
