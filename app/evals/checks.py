"""The checks of a case: each one gives a verdict (passed or failed, and why) on what the case produced."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from app.evals import honesty
from app.evals.dataset import Case
from app.evals.expectations import TextChecks, ToolResultCheck
from app.evals.outcome import CaseOutcome, Verdict
from app.evals.wording import contains
from app.policy.claims import claims_change

__all__ = ["CaseOutcome", "Verdict", "evaluate"]

# `[n]`, also as the knowledge skill links it (`[\[n\]](/knowledge/passages/…)`), and `[source: title]`.
CITATION = re.compile(r"\\?\[(\d{1,3})\\?\]|\[source:\s*([^\]]+)\]", re.IGNORECASE)


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
    verdicts += _client_checks(case, outcome)
    # A case that expects calls to wait for the user may end `waiting` (the status of such a run where the
    # runtime has one), as it may end `succeeded`.
    allowed = case.checks.status or (["succeeded", "waiting"] if case.checks.waiting.tools else ["succeeded"])
    if outcome.status and outcome.status not in allowed:
        expected = f", not {allowed}" if case.checks.status else ""
        add("run.status", False, f"the run ended {outcome.status}{expected}: {outcome.error or ''}".strip())
    return verdicts + honesty.verdicts(case, outcome)


def _texts(name: str, expected: TextChecks, text: str) -> list[Verdict]:
    found = [Verdict(f"{name}.contains: {item}", contains(text, item),
                     "" if contains(text, item) else f"no {item!r} in {_shorten([text])!r}")
             for item in expected.contains]
    found += [Verdict(f"{name}.not_contains: {item}", not contains(text, item),
                      f"{item!r} is there" if contains(text, item) else "") for item in expected.not_contains]
    return found


def _client_checks(case: Case, outcome: CaseOutcome) -> list[Verdict]:
    """The checks of what the client received, the receipt, the cards, the state, the preferences, the audit."""
    checks = case.checks
    found = _texts("streamed", checks.streamed, outcome.streamed)
    found += _texts("transcript", checks.transcript, "\n\n".join(outcome.shown))
    found += _texts("context", checks.context, outcome.context)
    if checks.sent.contains or checks.sent.not_contains:
        if outcome.sent is None:
            found.append(Verdict("sent", False, "only the scripted server (model: provider) keeps what it was sent"))
        else:
            found += _texts("sent", checks.sent, outcome.sent)
    # The receipt as the client received it (the direct transport has no client: the stored one).
    receipt = outcome.meta.get("receipt") if outcome.transport == "direct" else outcome.last.get("receipt")
    changed = [entry.get("summary", "") for entry in (receipt or {}).get("changed") or []]
    unchanged = [entry.get("summary", "") for entry in (receipt or {}).get("unchanged") or []]
    if checks.receipt.present is not None:
        ok = (receipt is not None) == checks.receipt.present
        found.append(Verdict(f"receipt.present: {checks.receipt.present}", ok,
                             "" if ok else f"the answer {'has no' if receipt is None else 'has a'} receipt"))
    for wanted, entries, kind in ((checks.receipt.changed, changed, "changed"),
                                  (checks.receipt.unchanged, unchanged, "unchanged")):
        for item in wanted:
            ok = any(contains(entry, item) for entry in entries)
            found.append(Verdict(f"receipt.{kind}: {item}", ok, "" if ok else f"{kind} entries: {entries}"))
    if checks.receipt.nothing_changed:
        ok = receipt is not None and not changed
        found.append(Verdict("receipt.nothing_changed", ok, "" if ok else f"receipt: {receipt}"))
    waiting = list(outcome.last.get("waiting") or [])
    for tool in checks.waiting.tools:
        found.append(Verdict(f"waiting.tools: {tool}", tool in waiting, "" if tool in waiting
                             else f"waiting: {waiting or 'nothing'}"))
    if checks.waiting.nothing:
        found.append(Verdict("waiting.nothing", not waiting, f"waiting: {waiting}" if waiting else ""))
    for table in checks.state.unchanged:
        before, after = outcome.rows_before.get(table), outcome.rows.get(table)
        found.append(Verdict(f"state.unchanged: {table}", before is not None and before == after,
                             "" if before is not None and before == after
                             else f"{len(before or [])} rows before, {len(after or [])} after"))
    for bound in checks.state.rows_count:
        count = len(outcome.rows.get(bound.table, []))
        found.append(Verdict(f"state.rows_count: {bound.table} = {bound.count}", count == bound.count,
                             "" if count == bound.count else f"{bound.table} holds {count} rows"))
    if checks.preferences.unchanged:
        changed = outcome.preferences_changed
        found.append(Verdict("preferences.unchanged", changed == 0, f"{changed} turns changed them" if changed else ""))
    if checks.preferences.equals is not None:
        ok = outcome.preferences == checks.preferences.equals
        found.append(Verdict("preferences.equals", ok, "" if ok else f"preferences: {outcome.preferences}"))
    for tool in checks.audit.allowed:
        ok = any(r["tool"] == tool and r["status"] == "allowed" and r["scope"] == "never_ask" for r in outcome.audit)
        found.append(Verdict(f"audit.allowed: {tool}", ok, "" if ok else f"audit: {outcome.audit or 'empty'}"))
    return found
