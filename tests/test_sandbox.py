"""The JavaScript sandbox: values, limits, isolation, callbacks and console capture, in real V8 children."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from app.guards.sandbox import (
    SandboxLimits,
    SandboxMemoryExceeded,
    SandboxResult,
    SandboxTimeout,
    ScriptError,
    run_function,
    run_script,
)

SHORT = SandboxLimits(timeout=0.5)


def script(code: str, **kwargs: Any) -> SandboxResult:
    return asyncio.run(run_script(code, **kwargs))


def function(source: str, args: dict[str, Any], **kwargs: Any) -> SandboxResult:
    return asyncio.run(run_function(source, args, **kwargs))


def test_returns_arithmetic_and_objects() -> None:
    assert script("return 6 * 7").value == 42
    assert script("return {a: [1, 'two', null], b: {c: true}}").value == {
        "a": [1, "two", None],
        "b": {"c": True},
    }
    assert script("const x = 1;").value is None


def test_function_binds_declared_arguments() -> None:
    assert function("return `${greeting}, ${name}!`", {"greeting": "Hi", "name": "Ada"}).value == "Hi, Ada!"
    assert function("name = name.toUpperCase(); return [name, args.n]", {"name": "x", "n": 2}).value == [
        "X",
        2,
    ]
    assert function("return typeof extra", {}, params=["extra"]).value == "undefined"
    assert function("return args", {"args": [1]}).value == [1]


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        SandboxLimits(max_memory=0)


def test_function_rejects_parameter_names_that_are_not_identifiers() -> None:
    with pytest.raises(ValueError, match="identifiers"):
        function("return 1", {"a b": 1})


def test_syntax_error_carries_message_and_line() -> None:
    with pytest.raises(ScriptError) as caught:
        script("let x = 1;\nx x")
    assert "SyntaxError" in caught.value.message
    assert caught.value.line == 2


def test_thrown_error_carries_message_line_and_logs() -> None:
    with pytest.raises(ScriptError) as caught:
        script("console.log('before');\nawait null;\nthrow new TypeError('bad input')")
    assert caught.value.message == "TypeError: bad input"
    assert caught.value.line == 3
    assert caught.value.logs == ["before"]


def test_value_that_is_not_json_is_an_error() -> None:
    with pytest.raises(ScriptError, match="BigInt"):
        script("return 10n")


@pytest.mark.parametrize("code", ["while (true) {}", "await null; while (true) {}"])
def test_infinite_loop_times_out(code: str) -> None:
    started = time.monotonic()
    with pytest.raises(SandboxTimeout):
        script(code, limits=SHORT)
    assert time.monotonic() - started < SHORT.timeout + 1
    assert script("return 'next call still works'").value == "next call still works"


HEAP_HOG = "const a = []; while (true) a.push('x'.repeat(1000) + a.length);"
# ArrayBuffers live outside the V8 heap: the child's data cap stops these.
BUFFER_HOG = (
    "const k = []; while (true) { const b = new ArrayBuffer(2 ** 26); new Uint8Array(b).fill(1); k.push(b); }"
)


@pytest.mark.parametrize("code", [HEAP_HOG, f"await null; {HEAP_HOG}", BUFFER_HOG])
def test_huge_allocation_exceeds_memory(code: str) -> None:
    # After an await, the heap cap only shows once the timeout ends the wait for a promise.
    with pytest.raises(SandboxMemoryExceeded):
        script(code, limits=SandboxLimits(timeout=2))
    assert script("return 1").value == 1


def test_cancelled_call_does_not_leave_its_child_running() -> None:
    async def cancel() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(run_script("while (true) {}", limits=SandboxLimits(timeout=5)), 0.2)

    asyncio.run(cancel())
    assert script("return 'fresh'").value == "fresh"


def test_no_modules_processes_network_or_wasm() -> None:
    names = ["require", "process", "fetch", "XMLHttpRequest", "WebAssembly", "Deno", "Bun", "importScripts"]
    assert script(f"return {names}.map((n) => typeof globalThis[n])").value == ["undefined"] * len(names)


def test_each_call_gets_a_fresh_context() -> None:
    script("globalThis.leak = 1; return 0")
    assert script("return typeof leak").value == "undefined"


def test_callbacks_return_data_sync_and_async() -> None:
    rows = {"people": [{"name": "Ada"}, {"name": "Alan"}]}

    def query_table(name: str, filters: dict[str, Any]) -> list[dict[str, Any]]:
        return [row for row in rows[name] if all(row.get(k) == v for k, v in filters.items())]

    async def fetch(url: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"url": url, "body": "ok"}

    result = script(
        "const [found, page] = await Promise.all([\n"
        "  skilldesk.query_table('people', {name: 'Ada'}), skilldesk.fetch('https://example.test')]);\n"
        "return {found, page}",
        callbacks={"query_table": query_table, "fetch": fetch},
    )
    assert result.value == {"found": [{"name": "Ada"}], "page": {"url": "https://example.test", "body": "ok"}}


def test_callback_not_offered_does_not_exist() -> None:
    callbacks = {"query_table": lambda name, filters: []}
    code = "return [typeof skilldesk.query_table, typeof skilldesk.insert_row, Object.keys(skilldesk)]"
    assert script(code, callbacks=callbacks).value == ["function", "undefined", ["query_table"]]
    with pytest.raises(ScriptError, match="not a function"):
        script("await skilldesk.insert_row('people', {})", callbacks=callbacks)


def test_callback_error_is_a_catchable_js_error() -> None:
    def insert_row(name: str, values: dict[str, Any]) -> None:
        raise PermissionError(f"{name} is read-only")

    code = "try { await skilldesk.insert_row('people', {}); } catch (e) { return e.message; }"
    result = script(code, callbacks={"insert_row": insert_row})
    assert result.value == "PermissionError: people is read-only"
    with pytest.raises(ScriptError, match="people is read-only"):
        script("await skilldesk.insert_row('people', {})", callbacks={"insert_row": insert_row})


def test_console_output_is_captured() -> None:
    result = script("console.log('n =', 3, {a: 1}); console.error('oops'); return 'done'")
    assert result == SandboxResult("done", ['n = 3 {"a":1}', "oops"])


def test_function_can_use_callbacks_and_console() -> None:
    result = function(
        "const total = (await skilldesk.prices(sku)).reduce((s, p) => s + p, 0);\n"
        "console.log('total', total);\nreturn total",
        {"sku": "A1"},
        callbacks={"prices": lambda sku: [1.5, 2.5]},
    )
    assert result == SandboxResult(4.0, ["total 4"])
