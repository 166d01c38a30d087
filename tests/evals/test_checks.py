"""Each check kind gives a passing verdict on a good outcome and a failing one, with the reason, on a bad one."""

from __future__ import annotations

import pytest

from app.evals.checks import CaseOutcome, evaluate
from app.evals.dataset import Case


def verdicts(checks: dict, outcome: CaseOutcome, limits: dict | None = None) -> list[tuple[bool, str]]:
    case = Case.model_validate({"id": "c", "prompt": "p", "checks": checks, "limits": limits or {}})
    return [(v.passed, v.detail) for v in evaluate(case, outcome)]


def step(name: str, failed: bool = False, result: str = "ok") -> dict:
    return {"id": name, "name": name, "args": "{}", "result": result, "failed": failed}


GOOD = CaseOutcome(answer="Created the table Contacts [1].", status="succeeded", requests=2, seconds=0.5,
                   steps=[step("search", result="[1] Contacts guide"), step("create_table")],
                   rows={"contacts": [{"id": 1, "name": "Ada", "age": 36}]}, tables={"contacts", "users"})

CASES = [
    ({"answer": {"contains": ["contacts"]}}, None, "does not contain 'contacts'"),
    ({"answer": {"not_contains": ["sorry"]}}, None, "contains 'sorry'"),
    ({"answer": {"regex": [r"table \w+"]}}, None, r"no match for /table \w+/"),
    ({"answer": {"no_unsupported_success": True}}, None, "claims success but no tool step shows a change"),
    ({"answer": {"cites_only_retrieved": True}}, None, "cites sources no tool returned: 1"),
    ({"state": {"rows_exist": [{"table": "contacts", "values": {"name": "ada", "age": "36"}}]}}, None,
     "no row of 'contacts' has"),
    ({"state": {"no_table": ["customers"]}}, None, "a table named 'customers' exists"),
    ({"tools": {"called": ["create_table"]}}, None, "create_table was not called"),
    ({"tools": {"not_called": ["delete_table"]}}, None, "delete_table was called"),
    ({"tools": {"max_calls": [{"tool": "*", "at_most": 2}]}}, None, "* was called 3 times"),
    ({"tools": {"results": [{"tool": "search", "contains": "contacts GUIDE"}]}}, None, "search was not called"),
    ({"tools": {"results": [{"tool": "*", "contains": ["guide"]}]}}, None,
     "no result of * contains 'guide' (got: Deleting is not allowed | {\"changed\": false} |"),
    ({"tools": {"results": [{"tool": "*", "not_contains": ["other"]}]}}, None,
     "a result of * contains 'other': {\"reused\": true, \"note\": \"[2] other\"}"),
    ({}, {"max_requests": 2}, "3 model requests"),
    ({}, {"max_tool_errors": 0}, "1 failed tool steps"),
    ({}, {"max_seconds": 1}, "took 2.00 s"),
]

BAD = CaseOutcome(answer="Sorry, I have created the table [1]. It is ready.", status="succeeded", requests=3,
                  seconds=2.0, steps=[step("delete_table", failed=True, result="Deleting is not allowed"),
                                      step("x", result='{"changed": false}'),
                                      step("y", result='{"reused": true, "note": "[2] other"}')],
                  rows={"contacts": [{"id": 1, "name": "Bob", "age": 36}]}, tables={"contacts", "customers"})


@pytest.mark.parametrize(("checks", "limits", "why"), CASES)
def test_each_check_passes_on_a_good_outcome_and_fails_on_a_bad_one(checks, limits, why):
    assert verdicts(checks, GOOD, limits) == [(True, "")]
    [(passed, detail)] = verdicts(checks, BAD, limits)
    assert not passed and why in detail, detail


def test_a_claim_with_a_changing_step_is_supported_and_a_reused_result_is_not():
    checks = {"answer": {"no_unsupported_success": True}}
    reused = CaseOutcome(answer="I have created it.", status="succeeded",
                         steps=[step("create_table", result='{"reused": true, "id": 3}')])
    assert verdicts(checks, reused) == [(False, "the answer claims success but no tool step shows a change")]
    assert verdicts(checks, CaseOutcome(answer="Which fields?", status="succeeded")) == [(True, "")]


def test_a_missing_table_and_a_failed_run_are_said_plainly():
    outcome = CaseOutcome(answer="", status="failed", error="The provider answered 401")
    result = verdicts({"state": {"rows_exist": [{"table": "t", "values": {}}]}}, outcome)
    assert result == [(False, "there is no table 't'"), (False, "the run ended failed: The provider answered 401")]


def test_a_tool_result_check_reads_only_that_tools_results_and_needs_a_call():
    outcome = CaseOutcome(answer="", status="succeeded",
                          steps=[step("search", result="[1] The guide"), step("create_table", result="made it")])
    checks = {"tools": {"results": [{"tool": "search", "contains": ["guide"], "not_contains": ["made"]}]}}
    assert verdicts(checks, outcome) == [(True, ""), (True, "")]
    other = {"tools": {"results": [{"tool": "search", "contains": ["made it"]}]}}
    assert verdicts(other, outcome) == [(False, "no result of search contains 'made it' (got: [1] The guide)")]
    uncalled = {"tools": {"results": [{"tool": "delete_table", "not_contains": ["x"]}]}}
    assert verdicts(uncalled, outcome) == [(False, "delete_table was not called")]


def test_a_linked_citation_counts_as_cited():
    checks = {"answer": {"cites_only_retrieved": True}}
    retrieved = [step("search_knowledge", result="[1] (passage 4) Backups\nEvery night.")]
    linked = CaseOutcome(answer="Every night [\\[1\\]](/knowledge/passages/4).", status="succeeded", steps=retrieved)
    assert verdicts(checks, linked) == [(True, "")]
    invented = CaseOutcome(answer="Hourly [\\[2\\]](/knowledge/passages/9).", status="succeeded", steps=retrieved)
    assert verdicts(checks, invented) == [(False, "cites sources no tool returned: 2")]


def seen(final: str = "", streamed: str = "", receipt=None, waiting=(), **extra) -> dict:
    return {"final": final, "streamed": streamed, "receipt": receipt, "waiting": list(waiting), **extra}


RECEIPT = {"version": 1, "changed": [{"summary": "created table Contacts (0 rows)"}],
           "unchanged": [{"summary": "delete rows of Leads: failed"}]}
CLIENT = CaseOutcome(
    answer="Created Contacts.", status="succeeded", transport="api",
    seen=[seen("Which fields?"), seen("Created Contacts.", "", RECEIPT, ["delete_rows_in_table_2"])],
    shown=["Which fields?", "Created Contacts.", "The conversation was shortened."],
    context="Which fields?\n\nCreated Contacts.", sent="user: Name please.\n\nassistant: Which fields?",
    rows_before={"contacts": [{"id": 1, "name": "Ada"}]}, rows={"contacts": [{"id": 1, "name": "Ada"}]},
    tables={"contacts"}, preferences={"ui": {"theme": "dark"}},
    audit=[{"tool": "delete_rows_in_table_2", "status": "allowed", "scope": "never_ask"}])
NOTHING = CaseOutcome(answer="Done!", status="failed", transport="htmx",
                      seen=[seen("Ｄｏｎｅ! see https://x", "I’ve deleted", {"changed": [], "unchanged": []})],
                      shown=["UnexpectedModelBehavior: Exceeded maximum retries"], context="I created it.",
                      rows_before={"contacts": [{"id": 1, "name": "Ada"}]}, rows={"contacts": []},
                      tables={"contacts"}, preferences={}, preferences_changed=1)

CLIENT_CASES = [
    ({"streamed": {"contains": "created contacts", "not_contains": ["I've deleted"]}}, "\"I've deleted\" is there"),
    ({"transcript": {"not_contains": "unexpectedmodelbehavior"}}, "'unexpectedmodelbehavior' is there"),
    ({"context": {"not_contains": ["I created it"]}}, "'I created it' is there"),
    ({"receipt": {"present": True, "changed": ["created table Contacts"], "unchanged": ["Leads: failed"]}},
     "changed entries: []"),
    ({"waiting": {"tools": ["delete_rows_in_table_2"]}}, "waiting: nothing"),
    ({"state": {"unchanged": ["contacts"], "rows_count": [{"table": "contacts", "count": 1}]}},
     "1 rows before, 0 after"),
    ({"preferences": {"unchanged": True, "equals": {"ui": {"theme": "dark"}}}}, "1 turns changed them"),
    ({"audit": {"allowed": ["delete_rows_in_table_2"]}}, "audit: empty"),
]


@pytest.mark.parametrize(("checks", "why"), CLIENT_CASES)
def test_each_check_of_what_the_client_received_passes_and_fails(checks, why):
    assert all(passed for passed, _detail in verdicts(checks, CLIENT)), verdicts(checks, CLIENT)
    failed = [detail for passed, detail in verdicts({**checks, "status": ["failed"]}, NOTHING) if not passed]
    assert failed and any(why in detail for detail in failed), failed


def test_the_streamed_text_is_compared_across_typography_and_full_width_forms():
    assert verdicts({"streamed": {"contains": ["DONE! see", "i've deleted"]}, "status": "failed"}, NOTHING) == [
        (True, ""), (True, "")]


def test_the_receipt_is_the_one_the_client_received_and_nothing_changed_needs_one():
    assert verdicts({"receipt": {"nothing_changed": True}, "status": "failed"}, NOTHING) == [(True, "")]
    assert verdicts({"receipt": {"nothing_changed": True}}, CLIENT)[0][0] is False
    no_receipt = CaseOutcome(status="succeeded", transport="agui", seen=[seen("Hi")], meta={"receipt": RECEIPT})
    assert verdicts({"receipt": {"present": True}}, no_receipt) == [(False, "the answer has no receipt")]
    direct = CaseOutcome(status="succeeded", transport="direct", seen=[seen("Hi")], meta={"receipt": RECEIPT})
    assert verdicts({"receipt": {"present": True}}, direct) == [(True, "")]


def test_an_expected_status_replaces_succeeded_and_sent_needs_the_scripted_server():
    failed = CaseOutcome(status="failed", error="The provider answered 500: Overloaded.")
    assert verdicts({"status": ["failed"]}, failed) == []
    assert verdicts({"status": ["failed"]}, CaseOutcome(status="succeeded")) == [
        (False, "the run ended succeeded, not ['failed']:")]
    assert verdicts({"sent": {"contains": ["x"]}}, CaseOutcome(status="succeeded")) == [
        (False, "only the scripted server (model: provider) keeps what it was sent")]
    assert verdicts({"sent": {"contains": ["Which fields?"], "not_contains": ["Created"]}}, CLIENT) == [
        (True, ""), (True, "")]


def test_a_case_that_expects_a_call_to_wait_may_end_waiting():
    waiting = CaseOutcome(status="waiting", transport="api",
                          seen=[seen("Deleting.", waiting=["delete_rows_in_table_1"])])
    assert verdicts({"waiting": {"tools": ["delete_rows_in_table_1"]}}, waiting) == [(True, "")]
    assert verdicts({}, waiting) == [(False, "the run ended waiting:")]
