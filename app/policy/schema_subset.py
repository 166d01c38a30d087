"""The JSON Schema subset a client may give for a proposable target, and strict JSON text parsing.

A client declares, for each target it is willing to have proposed, a schema the proposed value must
satisfy. That schema is untrusted input, so only a small subset of Draft 2020-12 is accepted, and
the check fails closed: a schema that uses anything else makes the target not proposable.

Allowed: type, enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength,
maxLength, minItems, maxItems, items, properties, required, additionalProperties (a boolean only).
Ignored: title, description, default, examples, $comment. Anything else (pattern, $ref, oneOf,
format, ...) is refused, so a client's regular expression never runs on the server.

Also refused: a boolean subschema (`true`/`false` in `items` or `properties`), a schema or
subschema that does not say what kind of value it takes (none of type, enum, const: `{}`, or
`{"minimum": 1}`, which any string satisfies), more than 4 levels of nested schemas, and more than
2000 bytes of compact JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import create

CONSTRAINTS = (
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "minItems", "maxItems", "items", "properties", "required",
    "additionalProperties",
)
ANNOTATIONS = ("title", "description", "default", "examples", "$comment")
KIND_KEYWORDS = ("type", "enum", "const")
MAX_DEPTH = 4
MAX_BYTES = 2000

# Draft 2020-12 with only the subset's keyword validators and no format checking: a keyword that
# slipped past the walker would still do nothing here.
SubsetValidator = create(
    meta_schema=Draft202012Validator.META_SCHEMA,
    validators={name: Draft202012Validator.VALIDATORS[name] for name in CONSTRAINTS},
    type_checker=Draft202012Validator.TYPE_CHECKER,
    format_checker=None,
)


class NotProposable(ValueError):
    """A schema outside the subset; the message says which rule it breaks."""


class InvalidJSON(ValueError):
    """JSON text that is not strict JSON (NaN, Infinity, a duplicate key, a syntax error)."""


@dataclass(frozen=True)
class ProposalSchema:
    """A schema that passed the subset check; it validates proposed values."""

    schema: dict[str, Any]

    def errors(self, value: Any) -> list[str]:
        """Return what is wrong with the value, empty when it satisfies the schema."""
        validator = SubsetValidator(self.schema)
        return [_describe(error) for error in validator.iter_errors(value)]

    def is_valid(self, value: Any) -> bool:
        """Tell whether the value satisfies the schema."""
        return not self.errors(value)


def compile_schema(schema: Any) -> ProposalSchema:
    """Check a client's schema against the subset; raise NotProposable with the reason."""
    try:
        size = len(compact_json(schema).encode())
    except (TypeError, ValueError) as error:
        raise NotProposable(f"the schema is not JSON data ({error})") from None
    if size > MAX_BYTES:
        raise NotProposable(f"the schema is {size} bytes; the limit is {MAX_BYTES}")
    _walk(schema, "schema", 1)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise NotProposable(f"the schema is invalid: {error.message}") from None
    return ProposalSchema(schema)


def _walk(schema: Any, where: str, depth: int) -> None:
    if not isinstance(schema, dict):
        kind = "a boolean subschema" if isinstance(schema, bool) else "not an object"
        raise NotProposable(f"{where} is {kind}; every schema must be an object")
    if depth > MAX_DEPTH:
        raise NotProposable(f"{where} is nested deeper than {MAX_DEPTH} levels")
    unknown = sorted(set(schema) - set(CONSTRAINTS) - set(ANNOTATIONS))
    if unknown:
        raise NotProposable(f"{where} uses {', '.join(unknown)}, outside the allowed keywords")
    if not any(keyword in schema for keyword in KIND_KEYWORDS):
        raise NotProposable(f"{where} constrains nothing: give it a type, an enum or a const")
    if "additionalProperties" in schema and not isinstance(schema["additionalProperties"], bool):
        raise NotProposable(f"{where}.additionalProperties must be true or false")
    _check_numbers(schema, where)
    if "items" in schema:
        _walk(schema["items"], f"{where}.items", depth + 1)
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise NotProposable(f"{where}.properties must be an object")
    for name, subschema in properties.items():
        _walk(subschema, f"{where}.properties.{name}", depth + 1)


def _check_numbers(schema: dict[str, Any], where: str) -> None:
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        value = schema.get(keyword)
        if isinstance(value, float) and not math.isfinite(value):
            raise NotProposable(f"{where}.{keyword} must be a finite number")


def _describe(error) -> str:
    path = "".join(f"[{part!r}]" for part in error.absolute_path)
    return f"value{path}: {error.message}" if path else error.message


MAX_JSON_DEPTH = 64
"""Arrays and objects nested in JSON a client sends, at most (a page context or a webhook needs a handful)."""


def too_deep(what: str = "The JSON body") -> str:
    """Say that `what` is nested past MAX_JSON_DEPTH, and the fix (one wording for bodies and form fields)."""
    return f"{what} is nested more than {MAX_JSON_DEPTH} levels deep; send a flatter {what.split()[-1].lower()}."


def nested_deeper_than(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Tell whether arrays and objects in a parsed JSON value nest more than `limit` levels; a loop, not recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def compact_json(value: Any) -> str:
    """Serialize as compact JSON; NaN and Infinity raise ValueError (they are not JSON)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def loads_json(text: str | bytes) -> Any:
    """Parse strict JSON text: NaN, Infinity, numbers that overflow, and duplicate keys are refused."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float,
                          object_pairs_hook=_unique_keys)
    except InvalidJSON:
        raise
    except RecursionError:
        raise InvalidJSON("the JSON text is nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, too many integer digits
        raise InvalidJSON(f"not valid JSON: {error}") from None


def _refuse_constant(name: str) -> Any:
    raise InvalidJSON(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidJSON(f"{text} is out of the range of a JSON number")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidJSON(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result
