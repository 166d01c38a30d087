"""Benchmark serving a team (issue 22): Skilldesk as `flask serve` runs it, against a fake provider, on SQLite and
on PostgreSQL + Redis.

Run with the project's venv: `.venv/bin/python benchmarks/serving.py` (`--quick` for fewer turns, whose figures
are not the targets'; `--only sqlite|postgres` for one backend; `--no-soak`). Everything listens on 127.0.0.1
only: a stdlib fake OpenAI-compatible server in a process of its own (`tests/fake_openai.py`: a fixed streamed
reply), and Skilldesk (`flask serve`: one web worker per core and the knowledge process) with an agent on an
"OpenAI-compatible" model configuration pointed at the fake. The same client calls the fake directly as the
baseline, interleaved in the same run (the machine is shared). Each backend gets a fresh install, started once
to index the built-in documentation (the knowledge process loads the embedding model for it), then started
again: that start is measured, and no knowledge query is made after it. Prints `name: value unit (target …)`
and exits 1 when a target is missed:

- startup to the first 200 ≤ 3 s; memory (PSS, so pages a fork shares count once) of the whole install idle
  ≤ 250 MiB, each web worker ≤ 150 MiB; memory per process after the rounds;
- server CPU (every process of the install, from /proc) per stored turn at N = 1 (100 turns one after
  another) ≤ 20 ms, and at N = 50, 200, 500 turns at once with its ratio to N = 1 (≤ 1.3 at N = 200). The
  chats are titled beforehand, so no round pays for a first turn's title job (a cost per chat, not per turn);
- at N = 50, 200, 500: 0 errors and every reply stored (a turn refused with 503 + Retry-After past a worker's
  capacity is sent again after it, as the composer lets a person do, and counted apart); turns/s as a share
  of direct turns/s in the same run (≥ 40% at N = 200);
- the soak, on PostgreSQL + Redis with 2 workers: 200 streams at once for 2 minutes (each a person sending a
  turn and following it to its end, again and again): 0 errors, 0 runs left running, memory growth after
  the first minute ≤ 10%.
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
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _figures import Figures  # noqa: E402
from _serving_processes import (  # noqa: E402
    Skilldesk,
    connections_per_process,
    cpu_seconds,
    memory_by_role,
    postgres_missing,
    scratch_database,
)

from tests.fake_openai import ANSWER  # noqa: E402

PASSWORD = "benchmark password"
EMAIL = "bench@example.org"
SEQUENTIAL_TURNS = 100
CONCURRENT = (50, 200, 500)
SOAK_STREAMS, SOAK_SECONDS = 200, 120
# The benchmark's one account sends a whole team's turns at once; the per-user bound (MAX_RUNS_PER_USER,
# default 3) would refuse all but three of them, so it is lifted here. Its check still runs on every send.
ONE_ACCOUNT_FOR_A_TEAM = {"SKILLDESK_MAX_RUNS_PER_USER": "100000"}
POSTGRES = os.environ.get("SKILLDESK_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS = os.environ.get("SKILLDESK_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
HX = {"HX-Request": "true"}


# --- the fake provider, in a process of its own --------------------------------------------------------

FAKE = """
import sys, threading
from tests.fake_openai import FakeOpenAI
server = FakeOpenAI()
print(server.base_url, flush=True)
server.serve_forever(poll_interval=0.05)
"""


@contextmanager
def fake_provider():
    """Serve the fake OpenAI-compatible API from another process; yield its base URL."""
    process = subprocess.Popen([sys.executable, "-c", FAKE], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.PIPE, text=True)
    try:
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(10)


# --- one turn, direct and through Skilldesk --------------------------------------------------------

async def direct_turn(client: httpx.AsyncClient, base_url: str) -> None:
    """The same exchange straight to the provider: one streamed chat completion, read to its end."""
    body = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": "hello"}]}
    text = []
    async with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line == "data: [DONE]":
                break
            if '"content": "' in line:
                text.append(line.split('"content": "', 1)[1].split('"', 1)[0])
    if "".join(text) != ANSWER:
        raise AssertionError(f"direct reply incomplete: {''.join(text)!r}")


class Refused(Exception):
    """The server answered 503 with Retry-After: it could not take the turn now (nothing was stored)."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"503, Retry-After {retry_after}")
        self.retry_after = retry_after


async def skilldesk_turn(client: httpx.AsyncClient, url: str, conversation_id: int, token: str) -> None:
    """POST the message over htmx, then read the run's event stream to its end event."""
    response = await client.post(f"{url}/chat/{conversation_id}/messages", data={"text": "hello"},
                                 headers={**HX, "X-CSRFToken": token})
    if response.status_code == 503 and "Retry-After" in response.headers:
        raise Refused(float(response.headers["Retry-After"]))
    response.raise_for_status()
    run_id = re.search(r'data-run="([0-9a-f]+)"', response.text).group(1)
    end: list[str] | None = None
    async with client.stream("GET", f"{url}/runs/{run_id}/events", headers=HX) as stream:
        if stream.status_code == 503:  # past the streams a worker serves: the answer is stored, read it later
            raise AssertionError(f"run {run_id}: its stream was refused (503)")
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


async def patient_turn(client, url, conversation_id, token, refused: list[int]) -> None:
    """A turn sent again after each 503 + Retry-After (as a person resends from the composer, which kept it)."""
    while True:
        try:
            return await skilldesk_turn(client, url, conversation_id, token)
        except Refused as refusal:
            refused.append(1)
            await asyncio.sleep(refusal.retry_after)


async def sign_in(client: httpx.AsyncClient, url: str) -> str:
    page = (await client.get(f"{url}/login")).text
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    await client.post(f"{url}/login", data={"email": EMAIL, "password": PASSWORD, "csrf_token": token})
    page = (await client.get(f"{url}/chat/")).text
    return re.search(r'"X-CSRFToken": "([^"]+)"', page).group(1)


async def new_conversations(client: httpx.AsyncClient, desk: Skilldesk, token: str, count: int) -> list[int]:
    """New chats with the benchmark's agent, titled already (a first turn's title job is a chat's cost)."""
    ids = []
    for _ in range(count):
        response = await client.post(f"{desk.url}/chat/", data={"agent_id": desk.agent_id},
                                     headers={"X-CSRFToken": token})
        ids.append(int(response.headers["location"].rstrip("/").rsplit("/", 1)[-1]))
    desk.title(ids)
    return ids


# --- rounds --------------------------------------------------------------------------------------------

async def sequential_round(desk: Skilldesk, fake: str, figures: Figures, name: str, turns: int) -> float:
    """Turns one after another, interleaved with direct ones: server CPU per stored turn, wall time added."""
    async with httpx.AsyncClient(timeout=60) as client:
        token = await sign_in(client, desk.url)
        conversations = await new_conversations(client, desk, token, max(1, turns // 5))
        for conversation_id in conversations[:3]:  # warm up both paths
            await direct_turn(client, fake)
            await skilldesk_turn(client, desk.url, conversation_id, token)
        ours, direct = [], []
        cpu_before = cpu_seconds(desk.pids)
        for n in range(turns):
            start = time.perf_counter()
            await direct_turn(client, fake)
            direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            await skilldesk_turn(client, desk.url, conversations[n % len(conversations)], token)
            ours.append(time.perf_counter() - start)
        cpu = cpu_seconds(desk.pids) - cpu_before
    good, total = desk.stored_replies(conversations)
    cpu_ms = cpu / turns * 1000
    figures.report(f"{name}_n1_cpu_per_stored_turn", cpu_ms, "ms", "≤ 20", cpu_ms <= 20)
    figures.report(f"{name}_n1_stored_complete", good, f"of {total}", f"all {total}", good == total)
    figures.report(f"{name}_n1_wall_added_p50", (statistics.median(ours) - statistics.median(direct)) * 1000, "ms")
    return cpu_ms


async def _at_once(count: int, turn) -> tuple[float, list[BaseException]]:
    start = time.perf_counter()
    results = await asyncio.gather(*(turn(n) for n in range(count)), return_exceptions=True)
    return time.perf_counter() - start, [r for r in results if isinstance(r, BaseException)]


async def concurrent_round(desk: Skilldesk, fake: str, figures: Figures, name: str, count: int,
                           sequential_ms: float) -> None:
    """`count` turns fired at once, each in its own conversation, between two direct rounds of `count`."""
    limits = httpx.Limits(max_connections=2 * count + 10, max_keepalive_connections=2 * count + 10)
    refused: list[int] = []
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        token = await sign_in(client, desk.url)
        conversations = await new_conversations(client, desk, token, count)
        direct_before, direct_errors = await _at_once(count, lambda _n: direct_turn(client, fake))
        cpu_before = cpu_seconds(desk.pids)
        ours, errors = await _at_once(count, lambda n: patient_turn(client, desk.url, conversations[n], token,
                                                                    refused))
        cpu = cpu_seconds(desk.pids) - cpu_before
        direct_after, more_errors = await _at_once(count, lambda _n: direct_turn(client, fake))
    if direct_errors or more_errors:
        raise SystemExit(f"the fake provider failed: {(direct_errors + more_errors)[0]!r}")
    good, total = desk.stored_replies(conversations)
    direct = count / ((direct_before + direct_after) / 2)
    share = (count / ours) / direct * 100
    cpu_ms = cpu / count * 1000
    ratio = cpu_ms / sequential_ms
    figures.report(f"{name}_n{count}_errors", len(errors), "errors", "0", not errors)
    for error in errors[:3]:
        print(f"  {name} error at N={count}: {error!r}", file=sys.stderr)
    figures.report(f"{name}_n{count}_stored_complete", good, f"of {count}", f"all {count}",
                   good == count and total == count)
    figures.report(f"{name}_n{count}_refused_503_then_sent_again", len(refused), "turns")
    figures.report(f"{name}_n{count}_cpu_per_stored_turn", cpu_ms, "ms")
    figures.report(f"{name}_n{count}_cpu_ratio_to_n1", ratio, "x", "≤ 1.3" if count == 200 else None,
                   ratio <= 1.3 or count != 200)
    figures.report(f"{name}_n{count}_direct_turns_per_s", direct, "turns/s")
    figures.report(f"{name}_n{count}_turns_per_s", count / ours, "turns/s")
    figures.report(f"{name}_n{count}_share_of_direct", share, "%", "≥ 40" if count == 200 else None,
                   share >= 40 or count != 200)


def memory_round(desk: Skilldesk, figures: Figures, name: str, idle: bool) -> None:
    """Memory (PSS) per process and in all; the targets are the idle ones, before any knowledge query."""
    by_role = memory_by_role(desk.process.pid)
    stage = "idle" if idle else "after_rounds"
    total = sum(size for _role, size in by_role)
    figures.report(f"{name}_memory_{stage}_in_all", total, "MiB", "≤ 250" if idle else None, total <= 250 or not idle)
    for index, (role, size) in enumerate(by_role):
        web = role == "web worker"
        figures.report(f"{name}_memory_{stage}_{role.replace(' ', '_')}_{index}", size, "MiB",
                       "≤ 150" if idle and web else None, size <= 150 or not (idle and web))


async def soak_round(desk: Skilldesk, figures: Figures, name: str, streams: int, seconds: float) -> None:
    """`streams` people at once, each sending a turn and following it to its end, again and again."""
    limits = httpx.Limits(max_connections=2 * streams + 10, max_keepalive_connections=2 * streams + 10)
    errors: list[BaseException] = []
    refused: list[int] = []
    done = [0]
    samples: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        token = await sign_in(client, desk.url)
        conversations = await new_conversations(client, desk, token, streams)
        deadline = time.monotonic() + seconds

        async def person(conversation_id: int) -> None:
            while time.monotonic() < deadline:
                try:
                    await patient_turn(client, desk.url, conversation_id, token, refused)
                    done[0] += 1
                except Exception as error:  # counted: the target is none
                    errors.append(error)

        async def sample() -> None:
            await asyncio.sleep(seconds / 2)
            samples["first_minute"] = sum(size for _role, size in memory_by_role(desk.process.pid))

        await asyncio.gather(sample(), *(person(conversation_id) for conversation_id in conversations))
    samples["end"] = sum(size for _role, size in memory_by_role(desk.process.pid))
    running = desk.runs_left_running()
    growth = (samples["end"] - samples["first_minute"]) / samples["first_minute"] * 100
    for error in errors[:3]:
        print(f"  soak error: {error!r}", file=sys.stderr)
    figures.report(f"{name}_soak_turns", done[0], f"turns in {seconds:.0f} s by {streams} streams")
    figures.report(f"{name}_soak_errors", len(errors), "errors", "0", not errors)
    figures.report(f"{name}_soak_refused_503_then_sent_again", len(refused), "turns")
    figures.report(f"{name}_soak_runs_left_running", running, "runs", "0", running == 0)
    figures.report(f"{name}_soak_memory_after_first_minute", samples["first_minute"], "MiB")
    figures.report(f"{name}_soak_memory_at_end", samples["end"], "MiB")
    figures.report(f"{name}_soak_memory_growth_after_first_minute", growth, "%", "≤ 10", growth <= 10)


def backend_rounds(name: str, env: dict[str, str], fake: str, figures: Figures, quick: bool, soak: bool) -> None:
    """A fresh install on these settings: indexed once, started again (one web worker per core), then measured."""
    Skilldesk.install(env, EMAIL, PASSWORD)
    with Skilldesk.serving(env) as first:  # the first start indexes the documentation
        figures.report(f"{name}_first_start_docs_indexing", first.wait_for_first_indexing(), "s")
    with Skilldesk.serving(env) as desk:
        figures.report(f"{name}_web_workers", len(desk.web_workers()), "(one per core)")
        figures.report(f"{name}_startup_to_first_200", desk.startup_seconds, "s", "≤ 3", desk.startup_seconds <= 3)
        memory_round(desk, figures, name, idle=True)
        desk.add_agent(fake)
        sequential = asyncio.run(sequential_round(desk, fake, figures, name, 20 if quick else SEQUENTIAL_TURNS))
        for count in (20, 60, 100) if quick else CONCURRENT:
            asyncio.run(concurrent_round(desk, fake, figures, name, count, sequential))
        memory_round(desk, figures, name, idle=False)
        cores = len(desk.web_workers())
    if soak:  # the soak: 2 web workers
        with Skilldesk.serving(env, None if cores == 2 else 2) as desk:
            desk.add_agent(fake)
            asyncio.run(soak_round(desk, figures, name, 50 if quick else SOAK_STREAMS, 30 if quick else SOAK_SECONDS))


def main() -> int:
    quick, soak = "--quick" in sys.argv, "--no-soak" not in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    figures = Figures()
    figures.report("load_average_at_start", os.getloadavg()[0], "(1 min)")
    with fake_provider() as fake:
        if only in (None, "sqlite"):
            folder = Path(tempfile.mkdtemp(prefix="skilldesk-serving-"))
            env = {"DATABASE_URL": f"sqlite:///{folder / 'skilldesk.sqlite3'}", "SKILLDESK_SECRET_KEY": "bench",
                   "SKILLDESK_JOBS_SQLITE_PATH": str(folder / "jobs.sqlite3"),
                   "SKILLDESK_CHROMA_PATH": str(folder / "chroma"), "SKILLDESK_OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
                   **ONE_ACCOUNT_FOR_A_TEAM}
            backend_rounds("sqlite", env, fake, figures, quick, soak=False)
        if only in (None, "postgres"):
            missing = postgres_missing(POSTGRES, REDIS)
            if missing:
                print(f"PostgreSQL + Redis rounds skipped: {missing}")
                if soak:  # the soak's targets were not measured: not met
                    figures.report("postgres_soak_run", 0, "rounds", f"1 (needs {POSTGRES} and {REDIS})", ok=False)
            else:
                folder = Path(tempfile.mkdtemp(prefix="skilldesk-serving-pg-"))
                database = f"skilldesk_bench_{os.getpid()}"
                env = {"DATABASE_URL": scratch_database(POSTGRES, database, create=True), "REDIS_URL": REDIS,
                       "SKILLDESK_SECRET_KEY": "bench", "SKILLDESK_JOBS_SQLITE_PATH": str(folder / "jobs.sqlite3"),
                       "SKILLDESK_CHROMA_PATH": str(folder / "chroma"),
                       "SKILLDESK_OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
                       # The web workers and the knowledge process share the server's max_connections.
                       "SKILLDESK_DATABASE_MAX_CONNECTIONS": str(connections_per_process(POSTGRES, processes=4)),
                       **ONE_ACCOUNT_FOR_A_TEAM}
                try:
                    backend_rounds("postgres", env, fake, figures, quick, soak=soak)
                finally:
                    scratch_database(POSTGRES, database, create=False)
    figures.report("load_average_at_end", os.getloadavg()[0], "(1 min)")
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
