"""What `benchmarks/serving.py` reads from the outside: a running Skilldesk, its processes, their CPU and memory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
FLASK = str(ROOT / ".venv/bin/flask")
TICKS = os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def process_tree(pid: int) -> list[int]:
    """Return a process and all its descendants."""
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo += children(current)
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) of process trees so far, from /proc."""
    total = 0
    for member in (member for pid in pids for member in process_tree(pid)):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def pss_mib(pid: int) -> float:
    """A process's proportional set size in MiB: pages it shares with its fork parent count by half."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0
    return int(re.search(r"^Pss:\s+(\d+) kB", rollup, re.M).group(1)) / 1024


def memory_by_role(master: int) -> list[tuple[str, float]]:
    """(role, PSS MiB) of each process of a `flask serve`: the master, web workers, dirty arbiter, knowledge process."""
    found = [("master", pss_mib(master))]
    for child in children(master):
        grandchildren = children(child)
        if grandchildren:  # the dirty arbiter and its one worker, the knowledge process
            found.append(("dirty arbiter", pss_mib(child)))
            found += [("knowledge process", pss_mib(grandchild)) for grandchild in grandchildren]
        else:
            found.append(("web worker", pss_mib(child)))
    return found


def postgres_missing(postgres: str, redis_url: str) -> str | None:
    """Say what is missing, or None when PostgreSQL and Redis answer."""
    import psycopg
    import redis

    try:
        psycopg.connect(postgres, connect_timeout=3).close()
    except psycopg.Error as error:
        return f"no PostgreSQL at {postgres} ({error.__class__.__name__})"
    try:
        redis.Redis.from_url(redis_url, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        return f"no Redis at {redis_url} ({error.__class__.__name__})"
    return None


def scratch_database(postgres: str, name: str, create: bool) -> str:
    """Create (or drop) a database on the benchmark's PostgreSQL server; return its URL."""
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            connection.execute(f'CREATE DATABASE "{name}"')
    return postgres.rsplit("/", 1)[0] + f"/{name}"


def connections_per_process(postgres: str, processes: int) -> int:
    """Share the PostgreSQL server's free connections among the processes that use it (DATABASE_MAX_CONNECTIONS)."""
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as connection:
        limit = int(connection.execute("SHOW max_connections").fetchone()[0])
        used = connection.execute("SELECT count(*) FROM pg_stat_activity").fetchone()[0]
    # Each process also holds a listening connection; this benchmark needs a few.
    return max(3, (limit - used - 2 * processes - 6) // processes)


@dataclass
class Skilldesk:
    """A running `flask serve`: its address, its process, the settings it was started with."""

    url: str
    process: subprocess.Popen
    env: dict[str, str]
    startup_seconds: float
    control: object = None
    agent_id: int = 0
    conversations: list[int] = field(default_factory=list)

    @staticmethod
    def install(env: dict[str, str], email: str, password: str) -> None:
        """Migrate a fresh database and create the benchmark's user, as an admin would."""
        env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        for args in (("db", "upgrade"),
                     ("create-user", "--email", email, "--name", "Bench", "--role", "admin", "--password", password)):
            subprocess.run([FLASK, "--app", "wsgi", *args], cwd=ROOT, env=env, check=True, capture_output=True)

    @classmethod
    @contextmanager
    def serving(cls, env: dict[str, str], workers: int | None = None):
        """Serve with `flask serve` until the block ends; the start is timed until the first 200."""
        from _figures import free_port

        env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        port = free_port()
        command = [FLASK, "--app", "wsgi", "serve", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--workers", str(workers)] if workers else []
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=None if "-v" in sys.argv else subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        while True:
            try:
                if httpx.get(f"{url}/login", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise SystemExit(f"Skilldesk exited with status {process.returncode} before serving")
            time.sleep(0.01)
        desk = cls(url, process, env, time.perf_counter() - started)
        try:
            yield desk
        finally:
            desk.stop()

    @property
    def pids(self) -> list[int]:
        """The install's processes: gunicorn's master, its web workers, the dirty arbiter, the knowledge process."""
        return [self.process.pid]

    def web_workers(self) -> list[int]:
        return [child for child in children(self.process.pid) if not children(child)]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.control is not None:
            from app.extensions import db

            with self.control.app_context():
                db.engine.dispose()

    def app(self):
        """An app on the server's database, in this process, to set up and check what the server stored."""
        from app import create_app
        from app.config import database_uri

        if self.control is None:
            self.control = create_app({"SQLALCHEMY_DATABASE_URI": database_uri(self.env["DATABASE_URL"], ROOT),
                                       "SECRET_KEY": self.env["SKILLDESK_SECRET_KEY"], "JOBS_IMMEDIATE": True,
                                       "REDIS_URL": None, "LIVE_EVENTS": "process"})
        return self.control

    def add_agent(self, fake_base_url: str) -> None:
        """Point an agent at the fake through an OpenAI-compatible model configuration (as an admin would)."""
        from app.extensions import db
        from app.models import Agent, ModelConfig

        with self.app().app_context():
            config = ModelConfig(name=f"Fake {time.monotonic_ns()}", provider="openai-compatible", model_name="fake",
                                 base_url=fake_base_url, context_window=32000, timeout=60, profiles={},
                                 is_default=True)
            db.session.add(config)
            db.session.flush()
            agent = Agent(name=f"Bench {time.monotonic_ns()}", instructions="Answer briefly.",
                          model_config_id=config.id, roles=["admin", "user"], skills=[], max_requests=5)
            db.session.add(agent)
            db.session.commit()
            self.agent_id = agent.id

    def title(self, conversation_ids: list[int]) -> None:
        """Give the conversations a title, so their first turn queues no title job: a round measures turns."""
        from app.extensions import db
        from app.models import Conversation

        with self.app().app_context():
            db.session.execute(db.update(Conversation).where(Conversation.id.in_(conversation_ids))
                               .values(title="Benchmark"))
            db.session.commit()
            db.session.remove()

    def stored_replies(self, conversation_ids: list[int]) -> tuple[int, int]:
        """Return (succeeded runs whose stored reply is complete, runs) for the conversations."""
        from app.extensions import db
        from app.models import Message, Run
        from tests.fake_openai import ANSWER

        with self.app().app_context():
            runs = db.session.scalar(db.select(db.func.count()).select_from(Run)
                                     .where(Run.conversation_id.in_(conversation_ids)))
            good = db.session.scalar(
                db.select(db.func.count()).select_from(Message).join(Run, Run.id == Message.run_id)
                .where(Message.role == "assistant", Message.content == ANSWER, Run.status == "succeeded",
                       Run.conversation_id.in_(conversation_ids)))
            db.session.remove()
            return good, runs

    def runs_left_running(self) -> int:
        from app.extensions import db
        from app.models import Run
        from app.models.chat import ACTIVE_STATUSES

        with self.app().app_context():
            count = db.session.scalar(db.select(db.func.count()).select_from(Run)
                                      .where(Run.status.in_(ACTIVE_STATUSES)))
            db.session.remove()
            return count

    def wait_for_first_indexing(self, timeout: float = 900) -> float:
        """Wait until the first start's one-time work is done (the built-in documentation indexed); its seconds."""
        from app.extensions import db
        from app.models import KnowledgeBase, KnowledgeDocument

        start = time.perf_counter()
        with self.app().app_context():
            while time.perf_counter() - start < timeout:
                unsynced = db.session.scalar(db.select(db.func.count()).select_from(KnowledgeBase).where(
                    KnowledgeBase.folder.is_not(None), KnowledgeBase.synced_at.is_(None)))
                waiting = db.session.scalar(db.select(db.func.count()).select_from(KnowledgeDocument).where(
                    KnowledgeDocument.status.in_(("pending", "indexing"))))
                db.session.remove()  # the next look sees the server's latest commits
                if not unsynced and not waiting:
                    break
                time.sleep(0.5)
        return time.perf_counter() - start
