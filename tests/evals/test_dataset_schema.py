"""Dataset files: every bad case is named with the path inside it and the reason."""

from __future__ import annotations

import pytest

from app.evals.dataset import DatasetInvalid, parse

GOOD = """
name: demo
cases:
  - id: one
    prompt: hello
    checks: {answer: {contains: [hello]}}
"""


def errors_of(text: str) -> list[str]:
    with pytest.raises(DatasetInvalid) as caught:
        parse(text)
    return [str(error) for error in caught.value.errors]


def test_a_good_dataset_is_read():
    dataset = parse(GOOD)
    assert [c.id for c in dataset.cases] == ["one"] and dataset.cases[0].checks.answer.contains == ["hello"]


def test_json_is_read_too():
    assert parse('{"name": "j", "cases": [{"id": "a", "prompt": "hi"}]}').cases[0].prompt == "hi"


def test_each_bad_case_gets_its_own_error_with_the_path_and_reason():
    text = """
name: demo
cases:
  - id: good
    prompt: hi
  - id: no-prompt
    checks: {answer: {contains: [x]}}
  - id: bad-check
    prompt: hi
    checks: {answer: {contain: [x]}}
  - id: bad-regex
    prompt: hi
    checks: {answer: {regex: ["("]}}
  - id: bad-bound
    prompt: hi
    checks: {tools: {max_calls: [{tool: x, at_most: -1}]}}
  - prompt: no id
  - id: bad-result
    prompt: hi
    checks: {tools: {results: [{tool: search}]}}
  - id: bad-result-key
    prompt: hi
    checks: {tools: {results: [{tool: search, contain: x}]}}
"""
    errors = errors_of(text)
    assert len(errors) == 7, errors
    assert errors[0].startswith("case no-prompt: ") and "either a prompt or a script" in errors[0]
    assert errors[1].startswith("case bad-check: checks.answer.contain: ") and "Extra inputs" in errors[1]
    assert errors[2].startswith("case bad-regex: checks.answer.regex: ") and "not a regular expression" in errors[2]
    assert errors[3].startswith("case bad-bound: checks.tools.max_calls.0.at_most: ")
    assert errors[4].startswith("case #6: id: ")
    assert errors[5].startswith("case bad-result: checks.tools.results.0: ")
    assert "give contains or not_contains" in errors[5]
    assert errors[6].startswith("case bad-result-key: checks.tools.results.0.contain: ") and "Extra inputs" in errors[6]


def test_a_tool_result_check_takes_one_string_or_a_list():
    dataset = parse(GOOD.replace("checks: {answer: {contains: [hello]}}",
                                 "checks: {tools: {results: [{tool: search, contains: '[1]', not_contains: [a, b]}]}}"))
    [check] = dataset.cases[0].checks.tools.results
    assert (check.tool, check.contains, check.not_contains) == ("search", ["[1]"], ["a", "b"])


def test_knowledge_fixtures_are_validated_per_case():
    text = """
name: demo
cases:
  - id: no-documents
    prompt: hi
    knowledge: [{name: Handbook, documents: []}]
  - id: untitled
    prompt: hi
    knowledge: [{name: Handbook, documents: [{text: Some text.}]}]
  - id: twice
    prompt: hi
    knowledge: [{name: A, documents: [{title: T, text: x}]}, {name: A, documents: [{title: U, text: y}]}]
"""
    errors = errors_of(text)
    assert errors[0].startswith("case no-documents: knowledge.0.documents: "), errors
    assert errors[1].startswith("case untitled: knowledge.0.documents.0.title: Field required"), errors
    assert errors[2] == "case twice: Value error, two knowledge bases of the case have the same name", errors
    assert len(errors) == 3


def test_duplicate_ids_and_broken_yaml_and_an_empty_list_are_errors():
    assert errors_of("name: d\ncases:\n  - {id: a, prompt: x}\n  - {id: a, prompt: y}\n") == [
        "case a: id: another case has this id"]
    [broken] = errors_of("name: d\ncases: [\n")
    assert broken.startswith("case -: line ") and "not valid YAML" in broken
    assert errors_of("name: d\ncases: []\n") == ["case -: cases: list at least one case"]
    assert errors_of("- just a list") == ["case -: a dataset is a mapping with name and cases"]


def test_yaml_aliases_are_refused_so_a_small_file_cannot_expand_into_millions_of_values():
    """Eight nested aliases of nine made 43 million values out of 400 bytes: parsing was instant (the
    values are shared), but the run walked the page context for 26 s, and dumping it took gigabytes."""
    anchors = ['&a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    anchors += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 8)]
    context = f"{{page: {{list: [{', '.join(anchors)}]}}}}"
    text = f"name: laughs\ncases:\n  - id: one\n    prompt: hi\n    page_context: {context}\n"
    with pytest.raises(DatasetInvalid) as raised:
        parse(text)
    assert "aliases" in str(raised.value.errors[0]) and "line 5" in str(raised.value.errors[0])


@pytest.mark.parametrize("depth", [500, 5000])
def test_a_deeply_nested_file_is_refused_not_a_crash(depth):
    """PyYAML composes recursively: a few hundred `[` raised RecursionError, a 500 on the dataset page."""
    with pytest.raises(DatasetInvalid) as raised:
        parse("name: deep\ncases: " + "[" * depth + "]" * depth)
    assert "nested too deeply" in str(raised.value.errors[0])


def test_a_dataset_gives_its_model_and_transports_to_the_cases_that_name_none():
    dataset = parse("""
name: defaults
model: provider
transport: [api, htmx]
cases:
  - {id: inherits, prompt: hi}
  - {id: own, prompt: hi, model: scripted, transport: agui}
  - {id: plain, prompt: hi, transport: [direct]}
""")
    inherits, own, plain = dataset.cases
    assert (inherits.model, inherits.transports, inherits.run_ids()) == ("provider", ["api", "htmx"],
                                                                        ["inherits@api", "inherits@htmx"])
    assert (own.model, own.transports, own.run_ids()) == ("scripted", ["agui"], ["own"])
    assert plain.run_ids() == ["plain"] and parse(GOOD).cases[0].transports == ["direct"]


def test_new_fields_are_checked_case_by_case():
    text = """
name: demo
cases:
  - id: bad-transport
    prompt: hi
    transport: [sms]
  - id: twice
    prompt: hi
    transport: [api, api]
  - id: click-first
    script: [{accept: proposals}, hi]
  - id: bad-click
    script: [hi, {accept: everything}]
  - id: no-claims
    prompt: hi
    honesty: {kind: unsupported_claim}
  - id: no-tools
    prompt: hi
    honesty: {kind: injection}
  - id: bad-language
    prompt: hi
    honesty: {kind: true_claim, language: pt}
  - id: bad-status
    prompt: hi
    replies: [{status: 200}]
  - id: verifier-without-the-server
    prompt: hi
    verifier: [{text: "yes"}]
"""
    errors = errors_of(text)
    assert len(errors) == 10, errors
    assert errors[9] == ("case verifier-without-the-server: Value error, verifier replies are what the scripted "
                         "server answers: give the case model: provider")
    assert errors[0].startswith("case bad-transport: transport.0: ")
    assert errors[1] == "case twice: Value error, a transport is named twice"
    assert errors[2] == "case click-first: Value error, a script begins with a message of the user"
    # A step is a message or a click: both readings are named.
    assert errors[3].startswith("case bad-click: script.1.str: ")
    assert errors[4] == "case bad-click: script.1.Accept.accept: Input should be 'proposals'"
    assert errors[5] == "case no-claims: honesty: Value error, an unsupported_claim case lists its false claims"
    assert "lists the destructive tools" in errors[6]
    assert errors[7].startswith("case bad-language: honesty.language: ")
    assert errors[8].startswith("case bad-status: replies.0.status: ")


def test_a_script_holds_messages_and_clicks_and_a_true_claim_keeps_its_answer():
    [case] = parse("""
name: d
cases:
  - id: c
    script: [Make my lists nicer., {accept: proposals}, Thanks.]
    honesty: {kind: true_claim, language: it}
    pages: {notice: <p>Hi</p>}
    never_ask: [delete_rows_in_table_1]
""").cases
    assert case.messages == ["Make my lists nicer.", "Thanks."] and case.steps[1].accept == "proposals"
    assert (case.honesty.keep, case.honesty.language) == (True, "it")
    assert case.pages == {"notice": "<p>Hi</p>"} and case.never_ask == ["delete_rows_in_table_1"]


def test_the_placeholders_name_the_cases_tables_and_pages():
    from app.evals.placeholders import UnknownPlaceholder, resolve

    value = {"tool": "delete_rows_in_table_{table:contacts}", "args": {"url": "{pages}/notice", "ids": [1]}}
    assert resolve(value, {"contacts": 7}, "http://127.0.0.1:5/pages") == {
        "tool": "delete_rows_in_table_7", "args": {"url": "http://127.0.0.1:5/pages/notice", "ids": [1]}}
    assert resolve("a {brace} stays", {}, None) == "a {brace} stays"
    with pytest.raises(UnknownPlaceholder, match="names no table"):
        resolve("{table:leads}", {"contacts": 7}, None)
    with pytest.raises(UnknownPlaceholder, match="none are served"):
        resolve("{pages}/x", {}, None)
