"""Skilldesk's own commands in subprocesses, as a person runs them: an instance folder, a port, a log."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import flask_migrate
import httpx

from app import create_app
from app.extensions import db
from app.seed import ensure_defaults

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"


def instance(tmp_path: Path, **variables: str) -> dict[str, str]:
    """Migrate a fresh SQLite database in tmp_path; return the environment that points the commands at it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DATABASE_URL": f"sqlite:///{tmp_path / 'skilldesk.sqlite3'}",
           "SKILLDESK_SECRET_KEY": "server-test", "SKILLDESK_JOBS_SQLITE_PATH": str(tmp_path / "jobs.sqlite3"),
           "SKILLDESK_CHROMA_PATH": str(tmp_path / "chroma"), "SKILLDESK_WTF_CSRF_ENABLED": "false", **variables}
    app = create_app({"SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"], "SECRET_KEY": "server-test",
                      "JOBS_IMMEDIATE": True})
    with app.app_context():
        flask_migrate.upgrade()
        ensure_defaults()
        db.session.commit()
        db.engine.dispose()
    return env


def app_on(env: dict[str, str]):
    """An app on the same database as the commands, for the test to prepare and read rows."""
    return create_app({"SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"], "SECRET_KEY": "server-test",
                       "JOBS_IMMEDIATE": True})


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(command: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a shell command line from the repository root in a session of its own (Ctrl+C reaches its group)."""
    with log.open("wb") as out:  # exec: the shell becomes the command, so signals reach it alone
        return subprocess.Popen(["/bin/sh", "-c", f"exec {command}"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(check, what: str, timeout: float = 90.0, process: subprocess.Popen | None = None, log: Path | None = None):
    """Poll until check() answers something true; fail with the log when the process died or time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen" + (f"; log:\n{log.read_text()}" if log else ""))


def answering(url: str):
    """A check that is true once the server answers the URL."""
    def check():
        try:
            return httpx.get(url, timeout=2).status_code < 500
        except httpx.TransportError:
            return False
    return check


def press_ctrl_c(process: subprocess.Popen) -> None:
    """Press Ctrl+C without waiting: SIGINT to the command's whole process group, as a terminal sends it."""
    os.killpg(process.pid, signal.SIGINT)


def ctrl_c(process: subprocess.Popen, timeout: float = 60.0) -> int:
    """Press Ctrl+C and wait for the command to exit; returns its exit status."""
    press_ctrl_c(process)
    return process.wait(timeout)


def stop(process: subprocess.Popen) -> None:
    """Make sure the command is gone (after a failed test)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
