"""Benchmark serving a team on the provider path: Skilldesk as `make run` serves it, against a fake provider.

Run with the project's venv: `.venv/bin/python benchmarks/serving.py`. Everything listens on 127.0.0.1
only: a stdlib fake OpenAI-compatible server (streamed chat completions, a fixed multi-chunk reply,
TCP_NODELAY; `tests/fake_openai.py`) and Skilldesk in its own process, with an agent on an
"OpenAI-compatible" model configuration pointed at the fake. Direct-to-fake and through-Skilldesk
measurements are interleaved in the same run, because the machine is shared and noisy. Prints one
figure per line, `name: value unit (target …)`, and exits 1 when a target of issue 11 is missed:

- startup to the first 200 (≤ 3 s) and idle RSS after start (≤ 250 MiB);
- server CPU per stored turn, from /proc, over 100 sequential turns (≤ 20 ms);
- p50 and p95 wall time a turn adds against the same request sent straight to the fake;
- N = 50 and N = 200 turns at once, each in its own conversation: 0 errors, every reply complete and
  stored, turns/s as a share of direct turns/s (≥ 25% at both N); RSS after N = 200 (growth reported).

Each round is one function taking a `Skilldesk` (its URL, its processes, its database). Then the
multi-worker rounds of `benchmarks/_serving_workers.py`: N = 200 under 4 workers on PostgreSQL and Redis,
the cross-worker event delay and Stop from another worker (≤ 100 ms), memories across workers on a
Chroma server (skipped, with a line saying so, when PostgreSQL or Redis does not answer).
`--quick` runs fewer turns (for trying changes; its figures are not the targets').
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _figures import Figures  # noqa: E402
from _serving_workers import ONE_ACCOUNT_FOR_A_TEAM, multi_worker_rounds, wait_for_first_indexing  # noqa: E402

from tests.fake_openai import ANSWER, FakeOpenAI, fake_openai  # noqa: E402

PASSWORD = "benchmark password"
EMAIL = "bench@example.org"
SEQUENTIAL_TURNS = 100
CONCURRENT = (50, 200)
TICKS = os.sysconf("SC_CLK_TCK")


# --- processes ---------------------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
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
        todo += _children(current)
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


def rss_mib(pids: list[int]) -> float:
    """Memory of process trees, in MiB: the proportional set size, so pages a fork shares count once."""
    total_kib = 0
    for member in (member for pid in pids for member in process_tree(pid)):
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue
        total_kib += int(re.search(r"^Pss:\s+(\d+) kB", rollup, re.M).group(1))
    return total_kib / 1024


@dataclass
class Skilldesk:
    """A running Skilldesk: its address, its server process, and the settings it was started with."""

    url: str
    process: subprocess.Popen
    env: dict[str, str]
    startup_seconds: float
    control: object = None
    agent_id: int = 0
    conversations: list[int] = field(default_factory=list)

    @property
    def pids(self) -> list[int]:
        """The server's processes: gunicorn's master and its workers (the job consumer runs in one)."""
        return [self.process.pid]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serve_command(port: int, workers: int = 1) -> list[str]:
    """The command that serves Skilldesk, as `make run` does (`flask serve`: gunicorn's threaded workers)."""
    return [str(ROOT / ".venv/bin/flask"), "--app", "wsgi", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(workers)]


def flask(env: dict[str, str], *args: str) -> None:
    subprocess.run([str(ROOT / ".venv/bin/flask"), "--app", "wsgi", *args], cwd=ROOT, env=env, check=True,
                   capture_output=True)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_skilldesk(env_overrides: dict[str, str], workers: int = 1) -> Skilldesk:
    """Migrate, create the benchmark's user, then serve; time the start until the first 200."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_overrides}
    flask(env, "db", "upgrade")
    flask(env, "create-user", "--email", EMAIL, "--name", "Bench", "--role", "admin", "--password", PASSWORD)
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(serve_command(port, workers), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL if "-v" not in sys.argv else None)
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
    return Skilldesk(url, process, env, time.perf_counter() - started)


def control_app(desk: Skilldesk):
    """An app on the server's database, in this process, to set up and check what the server stored."""
    from app import create_app
    from app.config import database_uri

    if desk.control is None:
        env = desk.env
        desk.control = create_app({"SQLALCHEMY_DATABASE_URI": database_uri(env["DATABASE_URL"], Path(".")),
                                   "SECRET_KEY": env["SKILLDESK_SECRET_KEY"],
                                   "JOBS_SQLITE_PATH": env.get("SKILLDESK_JOBS_SQLITE_PATH", ""),
                                   "CHROMA_PATH": env.get("SKILLDESK_CHROMA_PATH", "")})
    return desk.control


def add_agent(desk: Skilldesk, fake: FakeOpenAI) -> None:
    """Point an agent at the fake through an OpenAI-compatible model configuration (as an admin would)."""
    from app.extensions import db
    from app.models import Agent, ModelConfig

    with control_app(desk).app_context():
        config = ModelConfig(name="Fake", provider="openai-compatible", model_name="fake", base_url=fake.base_url,
                             context_window=32000, timeout=30, profiles={}, is_default=True)
        db.session.add(config)
        db.session.flush()
        agent = Agent(name="Bench", instructions="Answer briefly.", model_config_id=config.id,
                      roles=["admin", "user"], skills=[], max_requests=5)
        db.session.add(agent)
        db.session.commit()
        desk.agent_id = agent.id


# --- one turn, direct and through Skilldesk --------------------------------------------------------

async def direct_turn(client: httpx.AsyncClient, fake: FakeOpenAI) -> None:
    """The same exchange straight to the provider: one streamed chat completion, read to its end."""
    body = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": "hello"}]}
    text = []
    async with client.stream("POST", f"{fake.base_url}/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line == "data: [DONE]":
                break
            if '"content": "' in line:
                text.append(line.split('"content": "', 1)[1].split('"', 1)[0])
    if "".join(text) != ANSWER:
        raise AssertionError(f"direct reply incomplete: {''.join(text)!r}")


async def skilldesk_turn(client: httpx.AsyncClient, desk: Skilldesk, conversation_id: int, token: str) -> None:
    """POST the message over htmx, then read the run's event stream to its end event."""
    response = await client.post(f"{desk.url}/chat/{conversation_id}/messages", data={"text": "hello"},
                                 headers={"HX-Request": "true", "X-CSRFToken": token})
    response.raise_for_status()
    run_id = re.search(r'data-run="([0-9a-f]+)"', response.text).group(1)
    end: list[str] | None = None
    async with client.stream("GET", f"{desk.url}/runs/{run_id}/events", headers={"HX-Request": "true"}) as stream:
        stream.raise_for_status()
        async for line in stream.aiter_lines():
            if line == "event: end":
                end = []
            elif end is not None and line.startswith("data:"):
                end.append(line)
            elif end is not None and not line:
                break
    if end is None:
        raise AssertionError(f"run {run_id}: the stream closed before its end event")
    if ANSWER not in "".join(end):
        raise AssertionError(f"run {run_id} ended without the whole reply: {''.join(end)[:300]}")


async def sign_in(client: httpx.AsyncClient, desk: Skilldesk) -> str:
    page = (await client.get(f"{desk.url}/login")).text
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    await client.post(f"{desk.url}/login", data={"email": EMAIL, "password": PASSWORD, "csrf_token": token})
    page = (await client.get(f"{desk.url}/chat/")).text
    return re.search(r'"X-CSRFToken": "([^"]+)"', page).group(1)


async def new_conversations(client: httpx.AsyncClient, desk: Skilldesk, token: str, count: int) -> list[int]:
    ids = []
    for _ in range(count):
        response = await client.post(f"{desk.url}/chat/", data={"agent_id": desk.agent_id},
                                     headers={"X-CSRFToken": token})
        ids.append(int(response.headers["location"].rstrip("/").rsplit("/", 1)[-1]))
    return ids


def stored_replies(desk: Skilldesk, conversation_ids: list[int]) -> tuple[int, int]:
    """Return (succeeded runs whose stored reply is complete, runs) for the conversations."""
    from app.extensions import db
    from app.models import Message, Run

    with control_app(desk).app_context():
        runs = db.session.scalar(db.select(db.func.count()).select_from(Run)
                                 .where(Run.conversation_id.in_(conversation_ids)))
        good = db.session.scalar(
            db.select(db.func.count()).select_from(Message).join(Run, Run.id == Message.run_id)
            .where(Message.role == "assistant", Message.content == ANSWER, Run.status == "succeeded",
                   Run.conversation_id.in_(conversation_ids)))
        return good, runs


# --- rounds --------------------------------------------------------------------------------------------

async def sequential_round(desk: Skilldesk, fake: FakeOpenAI, figures: Figures, turns: int) -> None:
    """Turns one after another, interleaved with direct ones: server CPU per stored turn, wall time added."""
    async with httpx.AsyncClient(timeout=60) as client:
        token = await sign_in(client, desk)
        conversations = await new_conversations(client, desk, token, max(1, turns // 5))
        for conversation_id in conversations[:3]:  # warm up both paths
            await direct_turn(client, fake)
            await skilldesk_turn(client, desk, conversation_id, token)
        ours, direct = [], []
        cpu_before = cpu_seconds(desk.pids)
        for n in range(turns):
            start = time.perf_counter()
            await direct_turn(client, fake)
            direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            await skilldesk_turn(client, desk, conversations[n % len(conversations)], token)
            ours.append(time.perf_counter() - start)
        cpu = cpu_seconds(desk.pids) - cpu_before
    good, total = stored_replies(desk, conversations)
    cpu_ms = cpu / turns * 1000

    figures.report("turn_server_cpu_per_stored_turn", cpu_ms, "ms", "≤ 20", cpu_ms <= 20)
    figures.report("turn_stored_complete", good, f"of {total}", f"all {total}", good == total)
    p50 = (statistics.median(ours) - statistics.median(direct)) * 1000
    p95 = (quantile(ours, 0.95) - quantile(direct, 0.95)) * 1000
    figures.report("turn_direct_p50", statistics.median(direct) * 1000, "ms")
    figures.report("turn_skilldesk_p50", statistics.median(ours) * 1000, "ms")
    figures.report("turn_added_p50", p50, "ms")
    figures.report("turn_added_p95", p95, "ms")


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[round(q * 100) - 1]


async def _at_once(count: int, turn) -> tuple[float, list[BaseException]]:
    start = time.perf_counter()
    results = await asyncio.gather(*(turn(n) for n in range(count)), return_exceptions=True)
    return time.perf_counter() - start, [r for r in results if isinstance(r, BaseException)]


async def concurrent_round(desk: Skilldesk, fake: FakeOpenAI, figures: Figures, count: int) -> None:
    """`count` turns fired at once, each in its own conversation, between two direct rounds of `count`."""
    limits = httpx.Limits(max_connections=count + 10, max_keepalive_connections=count + 10)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        token = await sign_in(client, desk)
        conversations = await new_conversations(client, desk, token, count)
        direct_before, direct_errors = await _at_once(count, lambda _n: direct_turn(client, fake))
        cpu_before = cpu_seconds(desk.pids)
        ours, errors = await _at_once(count, lambda n: skilldesk_turn(client, desk, conversations[n], token))
        cpu = cpu_seconds(desk.pids) - cpu_before
        direct_after, more_errors = await _at_once(count, lambda _n: direct_turn(client, fake))
    if direct_errors or more_errors:
        raise SystemExit(f"the fake provider failed: {(direct_errors + more_errors)[0]!r}")
    good, total = stored_replies(desk, conversations)
    share = (count / ours) / (count / ((direct_before + direct_after) / 2)) * 100
    figures.report(f"concurrent_{count}_errors", len(errors), "errors", "0", not errors)
    for error in errors[:3]:
        print(f"  error at N={count}: {error!r}", file=sys.stderr)
    figures.report(f"concurrent_{count}_stored_complete", good, f"of {count}", f"all {count}",
                   good == count and total == count)
    figures.report(f"concurrent_{count}_direct_turns_per_s", count / ((direct_before + direct_after) / 2), "turns/s")
    figures.report(f"concurrent_{count}_skilldesk_turns_per_s", count / ours, "turns/s")
    figures.report(f"concurrent_{count}_share_of_direct", share, "%", "≥ 25", share >= 25)
    figures.report(f"concurrent_{count}_server_cpu_per_turn", cpu / count * 1000, "ms")
    figures.report(f"concurrent_{count}_server_cpu_busy", cpu / ours * 100, "% of a core")


def start_round(desk: Skilldesk, figures: Figures) -> float:
    figures.report("startup_to_first_200", desk.startup_seconds, "s", "≤ 3", desk.startup_seconds <= 3)
    idle = rss_mib(desk.pids)
    figures.report("idle_rss_after_start", idle, "MiB", "≤ 250", idle <= 250)
    return idle


def embedded_env(folder: Path) -> dict[str, str]:
    """Settings for Skilldesk on its embedded defaults (SQLite, SQLite job queue) in a folder of its own."""
    return {"DATABASE_URL": f"sqlite:///{folder / 'skilldesk.sqlite3'}", "SKILLDESK_SECRET_KEY": "bench",
            "SKILLDESK_JOBS_SQLITE_PATH": str(folder / "jobs.sqlite3"), "SKILLDESK_CHROMA_PATH": str(folder / "chroma"),
            "SKILLDESK_OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",  # the admin's allow-list names the local provider
            **ONE_ACCOUNT_FOR_A_TEAM}


def main() -> int:
    quick = "--quick" in sys.argv
    figures = Figures()
    env = embedded_env(Path(tempfile.mkdtemp(prefix="skilldesk-serving-")))
    with fake_openai() as fake:
        desk = start_skilldesk(env)
        try:
            idle = start_round(desk, figures)
            add_agent(desk, fake)
            wait_for_first_indexing(control_app(desk), figures)
            asyncio.run(sequential_round(desk, fake, figures, 20 if quick else SEQUENTIAL_TURNS))
            for count in (10, 40) if quick else CONCURRENT:
                asyncio.run(concurrent_round(desk, fake, figures, count))
            after = rss_mib(desk.pids)
            figures.report("rss_after_concurrent_rounds", after, "MiB")
            figures.report("rss_growth", after - idle, "MiB")
        finally:
            desk.stop()
    multi_worker_rounds(figures, quick)  # 4 workers on PostgreSQL, Redis and a Chroma server
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
