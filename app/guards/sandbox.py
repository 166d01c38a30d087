"""Run untrusted JavaScript (admin-written tool functions, model-written code) in a V8 child process.

Each call gets a fresh V8 isolate (mini-racer) in a pooled child process, with a time cap and a
memory cap; a child that overran either is killed, never reused. JavaScript sees no `require`,
`process`, `fetch`, files or sockets: only `console` (captured) and `skilldesk.<name>(...)`, one
async function per Python callback the caller offers, bridged over the child's pipe. Arguments,
results and callback traffic are JSON. Children start with "spawn", so a script that runs this must
guard its entry point with `if __name__ == "__main__":` (gunicorn, flask and pytest do).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import multiprocessing
import os
import re
import resource
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any


@dataclass
class SandboxLimits:
    """Caps for one sandboxed call."""

    timeout: float = 2.0
    """Wall-clock seconds for the whole call, time spent in callbacks included."""
    max_memory: int = 64 * 1024 * 1024
    """Bytes of V8 heap; ArrayBuffers are capped by a process data limit of twice this plus 128 MiB."""

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.max_memory <= 0:  # mini-racer reads a memory limit of 0 as "none"
            raise ValueError("SandboxLimits needs a positive timeout and max_memory.")


@dataclass
class SandboxResult:
    """What a script returned, and what it wrote with console.log."""

    value: Any
    logs: list[str] = field(default_factory=list)


class SandboxError(Exception):
    """The sandboxed JavaScript did not produce a value."""


class SandboxTimeout(SandboxError):
    """The JavaScript ran past SandboxLimits.timeout."""


class SandboxMemoryExceeded(SandboxError):
    """The JavaScript allocated past SandboxLimits.max_memory."""


class ScriptError(SandboxError):
    """The JavaScript failed to parse or threw (the message and line are the script's own)."""

    def __init__(self, message: str, line: int | None = None, logs: list[str] | None = None) -> None:
        super().__init__(f"{message} (line {line})" if line else message)
        self.message, self.line, self.logs = message, line, logs or []


_SCRIPT_URL = "skilldesk-script.js"
_LOG_CAP = 64 * 1024  # characters of console output kept per call
_GRACE = 1.0  # seconds the parent waits past the timeout before killing a child that went quiet
_START_TIMEOUT = 30.0
_MAX_IDLE = 2
_MAX_RUNS = 200  # recycle a child now and then: V8 does not hand every freed page back
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")

# Runs first in each isolate. `__skilldeskFinish` hands the outcome to Python through `done`, a
# notification: awaiting a JS promise from Python would block on an isolate that is still busy.
_PRELUDE = f"""(bridge, done, namesJson) => {{
  delete globalThis.WebAssembly;  // its memory lives outside the V8 heap, past max_memory
  const logs = [];
  let logged = 0;
  const show = (v) => {{ try {{ return typeof v === "string" ? v : JSON.stringify(v) ?? String(v); }}
    catch {{ return String(v); }} }};
  const log = (...values) => {{
    if (logged > {_LOG_CAP}) return;
    const line = values.map(show).join(" ");
    logged += line.length;
    logs.push(logged > {_LOG_CAP} ? "[console output truncated]" : line);
  }};
  globalThis.console = Object.freeze({{ log, info: log, warn: log, error: log, debug: log }});
  globalThis.skilldesk = Object.freeze(Object.fromEntries(JSON.parse(namesJson).map((name) => [name,
    async (...args) => {{
      const reply = JSON.parse(await bridge(name, JSON.stringify(args)));
      if ("error" in reply) throw new Error(reply.error);
      return reply.value;
    }}])));
  const fail = (e) => {{
    let error = "uncaught exception";
    try {{ error = e instanceof Error ? `${{e.name}}: ${{e.message}}` : String(e); }} catch {{}}
    const line = Number(/{re.escape(_SCRIPT_URL)}:(\\d+)/.exec(String(e?.stack))?.[1]) || null;
    return JSON.stringify({{ error, line, logs }});
  }};
  const ok = (value) => {{ try {{ return JSON.stringify({{ value, logs }}); }}
    catch (e) {{ return fail(e); }} }};
  const finish = (promise) => {{ promise.then(ok, fail).then(done); }};
  Object.defineProperty(globalThis, "__skilldeskFinish", {{ value: finish }});
}}
//# sourceURL=skilldesk-prelude.js"""


Callbacks = dict[str, Callable[..., Any]]
"""Offered to JavaScript as `skilldesk.<name>`: plain functions run in a thread, async ones on the loop."""


async def run_script(
    code: str, *, limits: SandboxLimits | None = None, callbacks: Callbacks | None = None
) -> SandboxResult:
    """Run model-written code as the body of an async function; its `return` value is the result.

    Top-level `await` works; no `return` gives None; the value must be JSON-serialisable.
    """
    # The opening wrapper shares line 1 with the code, so error lines match the script's own.
    wrapped = f"__skilldeskFinish((async () => {{{code}\n}})())\n//# sourceURL={_SCRIPT_URL}"
    return await _run(wrapped, limits or SandboxLimits(), callbacks or {})


async def run_function(
    source: str,
    args: dict[str, Any],
    *,
    limits: SandboxLimits | None = None,
    callbacks: Callbacks | None = None,
    params: Iterable[str] | None = None,
) -> SandboxResult:
    """Call an admin-written async function body with its declared parameters bound to `args`.

    Each name in `params` (default: the keys of `args`) is a local variable, undefined when
    missing from `args`; `args` itself holds the whole object unless a parameter shadows it.
    """
    names = list(args if params is None else params)
    if bad := [name for name in names if not _IDENTIFIER.fullmatch(name)]:
        raise ValueError(f"Parameter names must be JavaScript identifiers; rename {', '.join(bad)}.")
    # `var` so the body may reassign or redeclare a parameter; the inner block lets it shadow one with `let`.
    declare = f"var {{{', '.join(names)}}} = args; " if names else ""
    wrapped = (
        f"__skilldeskFinish((async (args) => {{ {declare}{{{source}\n}}}})({json.dumps(args)}))\n"
        f"//# sourceURL={_SCRIPT_URL}"
    )
    return await _run(wrapped, limits or SandboxLimits(), callbacks or {})


# --- parent side --------------------------------------------------------------------------------


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    runs: int = 0

    def discard(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()
        self.process.close()


_idle: list[_Worker] = []
_idle_lock = threading.Lock()  # callers may sit on different event loops and threads


async def _run(code: str, limits: SandboxLimits, callbacks: Callbacks) -> SandboxResult:
    worker = await _acquire()
    reply: tuple[Any, ...] = ("cancelled",)
    try:
        reply = await _exchange(worker, code, limits, callbacks)
    finally:
        _release(worker, reusable=reply[0] in ("done", "error"))
    kind, *rest = reply
    if kind == "done":
        envelope = json.loads(rest[0])
        if "error" not in envelope:
            return SandboxResult(envelope.get("value"), envelope["logs"])
        # The data cap makes big ArrayBuffers fail this way rather than crash the child.
        if not envelope["error"].startswith("RangeError: Array buffer allocation failed"):
            raise ScriptError(envelope["error"], envelope["line"], envelope["logs"])
        kind = "oom"
    if kind == "error":
        raise ScriptError(*rest)
    if kind == "timeout":
        raise SandboxTimeout(f"JavaScript ran longer than {limits.timeout} s; do less work per call.")
    if kind == "oom" or rest[0] == -signal.SIGTRAP:  # V8 traps on a fatal out-of-memory
        raise SandboxMemoryExceeded(f"JavaScript used more than {limits.max_memory} bytes; use less data.")
    raise SandboxError(f"The sandbox process died with exit code {rest[0]}; see its stderr.")


async def _acquire() -> _Worker:
    with _idle_lock:
        while _idle:
            worker = _idle.pop()
            if worker.process.is_alive():
                return worker
            worker.discard()
    # spawn, not fork: the parent runs threads (event loop, Flask, V8) that fork would copy half-dead.
    context = multiprocessing.get_context("spawn")
    parent_end, child_end = context.Pipe()
    process = context.Process(target=_child_main, args=(child_end,), daemon=True, name="skilldesk-sandbox")
    process.start()
    child_end.close()
    worker = _Worker(process, parent_end)
    try:
        with _reading(parent_end) as inbox:
            if await asyncio.wait_for(inbox.get(), _START_TIMEOUT) != ("ready",):
                raise SandboxError("The sandbox process failed to start; see its stderr.")
    except BaseException:
        worker.discard()
        raise
    return worker


def _release(worker: _Worker, *, reusable: bool) -> None:
    worker.runs += 1
    if reusable and worker.runs < _MAX_RUNS:
        with _idle_lock:
            if len(_idle) < _MAX_IDLE:
                _idle.append(worker)
                return
    worker.discard()


@contextlib.contextmanager
def _reading(conn: Connection) -> Iterator[asyncio.Queue[tuple[Any, ...]]]:
    """Queue the child's messages as the event loop sees them arrive, without a thread per call."""
    loop, inbox, fd = asyncio.get_running_loop(), asyncio.Queue[tuple[Any, ...]](), conn.fileno()

    def receive() -> None:
        try:
            inbox.put_nowait(conn.recv())
        except (EOFError, OSError):
            loop.remove_reader(fd)
            inbox.put_nowait(("dead",))

    loop.add_reader(fd, receive)
    try:
        yield inbox
    finally:
        loop.remove_reader(fd)


async def _exchange(
    worker: _Worker, code: str, limits: SandboxLimits, callbacks: Callbacks
) -> tuple[Any, ...]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.timeout + _GRACE
    answering: set[asyncio.Task[None]] = set()
    one_sync_call = asyncio.Lock()  # sync callbacks often share one DB session, which is not thread-safe
    with _reading(worker.conn) as inbox:
        worker.conn.send(("run", code, sorted(callbacks), limits.timeout, limits.max_memory))
        try:
            while True:
                try:
                    message = await asyncio.wait_for(inbox.get(), deadline - loop.time())
                except TimeoutError:
                    return ("timeout",)
                if message[0] == "dead":
                    worker.process.join(1)
                    return ("dead", worker.process.exitcode)
                if message[0] != "call":
                    return message
                task = asyncio.create_task(_answer(worker.conn, message, callbacks, one_sync_call))
                answering.add(task)
                task.add_done_callback(answering.discard)
        finally:
            for task in answering:
                task.cancel()
            await asyncio.gather(*answering, return_exceptions=True)


async def _answer(
    conn: Connection, call: tuple[Any, ...], callbacks: Callbacks, one_sync_call: asyncio.Lock
) -> None:
    _, call_id, name, args_json = call
    try:
        if (callback := callbacks.get(name)) is None:
            raise LookupError(f"skilldesk.{name} is not offered to this script")
        args = json.loads(args_json)
        if inspect.iscoroutinefunction(callback):
            value = await callback(*args)
        else:
            async with one_sync_call:  # in a thread, so a slow query does not stall every chat's loop
                value = await asyncio.to_thread(callback, *args)
        reply = json.dumps({"value": value})
    # The script is the caller here: it gets the failure as an Error it may catch, or it fails with it.
    except Exception as exc:
        reply = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
    with contextlib.suppress(OSError):  # the child may have been killed meanwhile
        conn.send(("answer", call_id, reply))


# --- child side ---------------------------------------------------------------------------------

_call_ids = itertools.count()  # unique for the child's life, so a late answer never matches a new call


def _child_main(conn: Connection) -> None:
    # Imported here for laziness: V8 is loaded in the sandbox's child process only, never at start.
    from py_mini_racer import MiniRacer, init_mini_racer

    init_mini_racer(ignore_duplicate_init=True)
    # The first isolate reserves V8's shared code range; do it before the data cap is measured.
    MiniRacer().close()
    conn.send(("ready",))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "run":  # anything else is a late answer to a call whose run is over
            _, code, names, timeout, max_memory = message
            # ArrayBuffers live outside the V8 heap that max_memory caps: cap the data segment too.
            with open("/proc/self/status") as status:
                used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmData:"))
            resource.setrlimit(resource.RLIMIT_DATA, (used + 2 * max_memory + 2**27, resource.RLIM_INFINITY))
            conn.send(asyncio.run(_child_run(conn, code, names, timeout, max_memory)))


async def _child_run(conn: Connection, code: str, names: list[str], timeout: float, max_memory: int) -> tuple:
    from py_mini_racer import JSEvalException, JSOOMException, MiniRacer  # in the child only, as above

    loop = asyncio.get_running_loop()
    waiting: dict[int, asyncio.Future[str]] = {}

    def receive() -> None:
        try:
            message = conn.recv()
        except EOFError:
            os._exit(0)  # the parent is gone
        future = waiting.pop(message[1], None) if message[0] == "answer" else None
        if future is not None and not future.done():
            future.set_result(message[2])

    async def bridge(name: str, args_json: str) -> str:
        call_id = next(_call_ids)
        waiting[call_id] = loop.create_future()
        conn.send(("call", call_id, name, args_json))
        return await waiting[call_id]

    async def done(envelope: str) -> None:
        if not finished.done():
            finished.set_result(envelope)

    finished: asyncio.Future[str] = loop.create_future()
    loop.add_reader(conn.fileno(), receive)
    try:
        with MiniRacer() as racer:  # a fresh isolate: nothing leaks from one call into the next
            racer.set_hard_memory_limit(max_memory)
            async with racer.wrap_py_function(bridge) as js_bridge, racer.wrap_py_function(done) as js_done:
                racer.eval(_PRELUDE)(js_bridge, js_done, json.dumps(names))
                verdict = "timeout"
                try:
                    async with asyncio.timeout(timeout):
                        await racer.eval_cancelable(code)
                        envelope = await finished
                except TimeoutError:
                    # An isolate over its heap limit is terminated, so its promise just never settles;
                    # the flag query waits for the isolate, so one that is still spinning never answers.
                    over = asyncio.to_thread(racer.was_hard_memory_limit_reached)
                    with contextlib.suppress(TimeoutError):
                        verdict = "oom" if await asyncio.wait_for(over, 0.2) else "timeout"
                except JSOOMException:
                    verdict = "oom"
                except JSEvalException as exc:  # a syntax error: "<anonymous>:3: SyntaxError: ..."
                    found = re.match(r"[^:\n]*:(\d+): (.*)", str(exc))
                    return ("error", found[2], int(found[1])) if found else ("error", str(exc), None)
                else:
                    return ("done", envelope)
                # V8 may still be spinning: report, then leave without tearing the isolate down.
                conn.send((verdict,))
                os._exit(0)
    finally:
        loop.remove_reader(conn.fileno())
