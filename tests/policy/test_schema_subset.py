"""The proposal schema subset: the same verdicts as full Draft 2020-12 inside it, refusals outside it."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from app.policy.schema_subset import (
    MAX_BYTES,
    InvalidJSON,
    NotProposable,
    compact_json,
    compile_schema,
    loads_json,
)

NAMES = st.sampled_from(["a", "b", "layout", "size", "ü"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-20, 20),
    st.floats(-20, 20, allow_nan=False, allow_infinity=False), st.text(max_size=6),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(NAMES, inner, max_size=4)),
    max_leaves=12,
)
ANNOTATION = st.fixed_dictionaries({}, optional={"title": st.text(max_size=5), "description": st.text(max_size=5),
                                                 "default": SCALARS, "$comment": st.text(max_size=5)})
NUMBER = st.one_of(st.integers(-10, 10), st.floats(-10, 10, allow_nan=False, allow_infinity=False))


def _with(base: dict, optional: dict) -> st.SearchStrategy[dict]:
    return st.builds(lambda extra, notes: {**base, **extra, **notes},
                     st.fixed_dictionaries({}, optional=optional), ANNOTATION)


def _scalar_schemas() -> st.SearchStrategy[dict]:
    string = _with({"type": "string"}, {"minLength": st.integers(0, 4), "maxLength": st.integers(0, 6)})
    numeric = st.sampled_from(["integer", "number"]).flatmap(lambda kind: _with(
        {"type": kind}, {"minimum": NUMBER, "maximum": NUMBER, "exclusiveMinimum": NUMBER,
                         "exclusiveMaximum": NUMBER}))
    simple = st.sampled_from([{"type": "boolean"}, {"type": "null"}, {"type": ["string", "null"]},
                              {"type": ["integer", "boolean"]}])
    enum = st.lists(SCALARS, min_size=1, max_size=4).map(lambda values: {"enum": values})
    const = JSON_VALUES.map(lambda value: {"const": value})
    bounded = st.builds(lambda kind, low: {"type": kind, "minLength": low, "minimum": low},
                        st.sampled_from([["string", "number"], ["integer", "string"]]), st.integers(0, 3))
    return st.one_of(string, numeric, simple, enum, const, bounded)


def schemas(depth: int = 1) -> st.SearchStrategy[dict]:
    """In-subset schemas, at most four levels deep."""
    if depth >= 4:
        return _scalar_schemas()
    inner = st.deferred(lambda: schemas(depth + 1))
    array = st.builds(lambda items, extra: {"type": "array", "items": items, **extra}, inner,
                      st.fixed_dictionaries({}, optional={"minItems": st.integers(0, 3),
                                                          "maxItems": st.integers(0, 4)}))
    obj = st.dictionaries(NAMES, inner, max_size=3).flatmap(lambda properties: st.builds(
        lambda required, extra: {"type": "object", "properties": properties, **extra,
                                 **({"required": required} if required else {})},
        st.lists(st.sampled_from(sorted(properties) or ["a"]), unique=True, max_size=3),
        st.fixed_dictionaries({}, optional={"additionalProperties": st.booleans()})))
    return st.one_of(_scalar_schemas(), array, obj)


def shaped_values(schema: dict) -> st.SearchStrategy:
    """Values near the schema's shape, so that both verdicts occur often."""
    if schema.get("type") == "array":
        return st.lists(shaped_values(schema["items"]), max_size=4)
    if schema.get("type") == "object":
        properties = schema.get("properties", {})
        known = st.fixed_dictionaries({}, optional={name: shaped_values(sub) for name, sub in properties.items()})
        return st.builds(lambda values, extra: {**extra, **values}, known,
                         st.dictionaries(st.sampled_from(["extra", "a"]), SCALARS, max_size=1))
    candidates = list(schema.get("enum", [])) + ([schema["const"]] if "const" in schema else [])
    return st.one_of(JSON_VALUES, st.sampled_from(candidates)) if candidates else JSON_VALUES


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_in_subset_verdicts_match_the_full_draft_2020_12_validator(data):
    schema = data.draw(schemas())
    assume(len(compact_json(schema).encode()) <= MAX_BYTES)
    compiled = compile_schema(schema)
    full = Draft202012Validator(schema)
    for _ in range(3):
        value = data.draw(shaped_values(schema))
        assert compiled.is_valid(value) == full.is_valid(value), (schema, value)


@settings(max_examples=200, deadline=None)
@given(schemas())
def test_the_verdict_survives_a_round_trip_through_json_text(schema):
    assume(len(compact_json(schema).encode()) <= MAX_BYTES)
    assert compile_schema(loads_json(json.dumps(schema))).schema == schema


@pytest.mark.parametrize(("schema", "reason"), [
    ({"type": "string", "pattern": "^a+$"}, "pattern"),
    ({"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}}, "$defs, $ref"),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "oneOf"),
    ({"anyOf": [{"type": "string"}]}, "anyOf"),
    ({"type": "string", "format": "email"}, "format"),
    ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "patternProperties"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "must be true or false"),
    ({"type": "array", "items": True}, "a boolean subschema"),
    ({"type": "object", "properties": {"a": False}}, "a boolean subschema"),
    (True, "a boolean subschema"),
    ({}, "constrains nothing"),
    ({"title": "Layout", "description": "anything"}, "constrains nothing"),
    ({"minimum": 1}, "constrains nothing"),
    ({"type": "object", "properties": {"a": {}}}, "schema.properties.a constrains nothing"),
    ({"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {
        "type": "array", "items": {"type": "string"}}}}}, "deeper than 4 levels"),
    ({"type": "string", "enum": ["x" * 100] * 20}, "bytes; the limit is 2000"),
    ({"type": "string", "minLength": -1}, "invalid"),
    ({"type": "text"}, "invalid"),
    ({"type": "number", "minimum": float("nan")}, "not JSON data"),
    ([{"type": "string"}], "not an object"),
])
def test_schemas_outside_the_subset_are_not_proposable(schema, reason):
    with pytest.raises(NotProposable, match=reason.replace("$", r"\$")):
        compile_schema(schema)


def test_four_levels_and_exactly_2000_bytes_are_still_proposable():
    compile_schema({"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {
        "type": "string"}}}})
    schema = {"type": "string", "enum": ["x"]}
    schema["description"] = "d" * (MAX_BYTES - len(compact_json(schema).encode()) - len(',"description":""'))
    assert len(compact_json(schema).encode()) == MAX_BYTES
    compile_schema(schema)
    schema["description"] += "d"
    with pytest.raises(NotProposable, match="2001 bytes"):
        compile_schema(schema)


def test_annotations_are_ignored_and_formats_never_checked():
    compiled = compile_schema({"type": "string", "title": "t", "default": 3, "examples": ["x"], "$comment": "c"})
    assert compiled.is_valid("anything") and not compiled.is_valid(3)


def test_errors_say_where_the_value_is_wrong():
    compiled = compile_schema({"type": "object", "properties": {"layout": {"enum": ["table", "cards"]}},
                               "required": ["layout"], "additionalProperties": False})
    assert compiled.errors({"layout": "cards"}) == []
    assert compiled.errors({"layout": "grid"}) == ["value['layout']: 'grid' is not one of ['table', 'cards']"]
    assert any("additional" in e.lower() for e in compiled.errors({"layout": "table", "x": 1}))


def test_booleans_are_not_numbers_and_integers_equal_their_floats():
    assert not compile_schema({"enum": [1]}).is_valid(True)
    assert not compile_schema({"type": "integer"}).is_valid(False)
    assert compile_schema({"type": "integer"}).is_valid(2.0)


@pytest.mark.parametrize(("text", "reason"), [
    ("NaN", "NaN is not a JSON number"),
    ('{"a": Infinity}', "Infinity is not a JSON number"),
    ("[-Infinity]", "-Infinity is not a JSON number"),
    ("1e400", "out of the range"),
    ('{"a": 1, "a": 2}', "appears twice"),
    ('{"x": {"b": 1, "b": 1}}', "appears twice"),
    ("{'a': 1}", "not valid JSON"),
    ("", "not valid JSON"),
    ("1" * 5000, "not valid JSON"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    (b"\xff", "not valid JSON"),
])
def test_strict_json_text_refuses(text, reason):
    with pytest.raises(InvalidJSON, match=reason):
        loads_json(text)


def test_strict_json_text_parses_plain_json():
    assert loads_json('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
