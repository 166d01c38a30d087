"""The checks of a case: each one gives a verdict (passed or failed, and why) on what the case produced."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.evals.dataset import Case, ToolResultCheck
from app.policy.claims import claims_change

# `[n]`, also as the knowledge skill links it (`[\[n\]](/knowledge/passages/…)`), and `[source: title]`.
CITATION = re.compile(r"\\?\[(\d{1,3})\\?\]|\[source:\s*([^\]]+)\]", re.IGNORECASE)


@dataclass
class CaseOutcome:
    """What one case produced: the answer, the tool steps, the counts, and what the database holds."""

    answer: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""
    error: str | None = None
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    # Read inside the case's database once the case ended: table name → list of rows; table names.
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tables: set[str] = field(default_factory=set)

    @property
    def tool_errors(self) -> int:
        return sum(1 for step in self.steps if step.get("failed"))


@dataclass
class Verdict:
    check: str
    passed: bool
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "passed": self.passed, "detail": self.detail}


def claims_success(text: str) -> bool:
    """Whether a text says that something was done (applied, created, saved…): the answer checks' rule."""
    return claims_change(text) or re.search(r"(?i)\bsuccessfully\b", text) is not None


def cited_sources(text: str) -> list[str]:
    """The sources an answer cites: `[n]` numbers (linked or not) and `[source: title]` names."""
    return [number or name.strip() for number, name in CITATION.findall(text)]


def is_evidence(step: dict[str, Any]) -> bool:
    """A step supports a success claim when it succeeded and did not say it changed nothing or reused."""
    if step.get("failed"):
        return False
    try:
        result = json.loads(step.get("result") or "")
    except ValueError:
        return True
    return not (isinstance(result, dict) and (result.get("changed") is False or result.get("reused")))


def _retrieved(steps: list[dict[str, Any]]) -> str:
    return "\n".join(str(step.get("result") or "") for step in steps if not step.get("failed"))


def _cites_only_retrieved(outcome: CaseOutcome) -> Verdict:
    retrieved = _retrieved(outcome.steps)
    invented = [s for s in cited_sources(outcome.answer)
                if not re.search(rf"\[{re.escape(s)}\]|\b{re.escape(s)}\b", retrieved)]
    return Verdict("answer.cites_only_retrieved", not invented,
                   f"cites sources no tool returned: {', '.join(invented)}" if invented else "")


def _tool_results(expected: ToolResultCheck, steps: list[dict[str, Any]]) -> list[Verdict]:
    tool = expected.tool
    results = [str(step.get("result") or "") for step in steps if tool == "*" or step.get("name") == tool]
    lowered = [result.lower() for result in results]
    verdicts = []
    for text in expected.contains:
        name = f"tools.results: {tool} contains {text!r}"
        found = any(text.lower() in result for result in lowered)
        why = (f"{tool} was not called" if not results
               else f"no result of {tool} contains {text!r} (got: {_shorten(results)})")
        verdicts.append(Verdict(name, found, "" if found else why))
    for text in expected.not_contains:
        name = f"tools.results: {tool} does not contain {text!r}"
        hit = next((result for result, low in zip(results, lowered, strict=True) if text.lower() in low), None)
        ok = bool(results) and hit is None
        why = (f"{tool} was not called" if not results
               else f"a result of {tool} contains {text!r}: {_shorten([hit or ''])}")
        verdicts.append(Verdict(name, ok, "" if ok else why))
    return verdicts


def _shorten(results: list[str], limit: int = 200) -> str:
    joined = " | ".join(results)
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def _same(value: Any, expected: Any) -> bool:
    return str(value).strip().lower() == str(expected).strip().lower()


def evaluate(case: Case, outcome: CaseOutcome) -> list[Verdict]:
    """Return a verdict for every check and limit the case declares."""
    verdicts: list[Verdict] = []
    add: Callable[[str, bool, str], None] = lambda name, ok, why: verdicts.append(Verdict(name, ok, "" if ok else why))  # noqa: E731
    answer, lowered = outcome.answer, outcome.answer.lower()
    checks = case.checks
    for text in checks.answer.contains:
        add(f"answer.contains: {text}", text.lower() in lowered, f"the answer does not contain {text!r}")
    for text in checks.answer.not_contains:
        add(f"answer.not_contains: {text}", text.lower() not in lowered, f"the answer contains {text!r}")
    for pattern in checks.answer.regex:
        add(f"answer.regex: {pattern}", re.search(pattern, answer) is not None, f"no match for /{pattern}/")
    if checks.answer.no_unsupported_success:
        evidence = any(is_evidence(step) for step in outcome.steps)
        add("answer.no_unsupported_success", evidence or not claims_success(answer),
            "the answer claims success but no tool step shows a change")
    if checks.answer.cites_only_retrieved:
        verdicts.append(_cites_only_retrieved(outcome))
    for row in checks.state.rows_exist:
        found = any(all(_same(r.get(k), v) for k, v in row.values.items()) for r in outcome.rows.get(row.table, []))
        add(f"state.row_exists: {row.table} {row.values}", found,
            f"no row of {row.table!r} has {row.values}" if row.table in outcome.tables
            else f"there is no table {row.table!r}")
    for name in checks.state.no_table:
        add(f"state.no_table: {name}", name not in outcome.tables, f"a table named {name!r} exists")
    called = [step.get("name") for step in outcome.steps]
    for tool in checks.tools.called:
        add(f"tools.called: {tool}", tool in called, f"{tool} was not called (calls: {called or 'none'})")
    for tool in checks.tools.not_called:
        add(f"tools.not_called: {tool}", tool not in called, f"{tool} was called")
    for bound in checks.tools.max_calls:
        count = len(called) if bound.tool == "*" else called.count(bound.tool)
        add(f"tools.max_calls: {bound.tool} ≤ {bound.at_most}", count <= bound.at_most,
            f"{bound.tool} was called {count} times")
    for expected in checks.tools.results:
        verdicts += _tool_results(expected, outcome.steps)
    limits = case.limits
    if limits.max_requests is not None:
        add(f"limits.max_requests ≤ {limits.max_requests}", outcome.requests <= limits.max_requests
            and outcome.status != "unfinished", f"{outcome.requests} model requests (status {outcome.status})")
    if limits.max_tool_errors is not None:
        add(f"limits.max_tool_errors ≤ {limits.max_tool_errors}", outcome.tool_errors <= limits.max_tool_errors,
            f"{outcome.tool_errors} failed tool steps")
    if limits.max_seconds is not None:
        add(f"limits.max_seconds ≤ {limits.max_seconds}", outcome.seconds <= limits.max_seconds,
            f"took {outcome.seconds:.2f} s")
    if outcome.status not in ("succeeded", ""):
        add("run.status", False, f"the run ended {outcome.status}: {outcome.error or ''}".strip())
    return verdicts
