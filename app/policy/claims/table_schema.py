"""The JSON Schemas a word table is checked against at load (jsonschema): a language file and kinds.toml."""

from __future__ import annotations

from typing import Any

ACTIONS = ("create", "update", "delete", "send", "schedule", "run", "remember", "suggest")
# A list of words; lexicon.py checks each item is a short string (per-item schema checks cost 0.4 s at import).
WORDS = {"type": "array"}
PAIR = {"type": "string", "pattern": "^[a-z]+ [a-z]+$"}


def _section(keys: tuple[str, ...], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(required),
            "properties": {key: WORDS for key in keys}}


LANGUAGE: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["language", "detect", "grammar", "done", "subjects", "auxiliaries", "guards", "clauses", "phrases",
                 "time", "state", "objects", "numbers", "contractions", "signals"],
    "properties": {
        "language": {"type": "object", "additionalProperties": False, "required": ["code", "name"],
                     "properties": {"code": {"type": "string", "pattern": "^[a-z]{2,3}$"},
                                    "name": {"type": "string", "minLength": 1}}},
        "detect": _section(("markers",), ("markers",)),
        "grammar": {"type": "object", "additionalProperties": False, "required": ["past_is_done", "window"],
                    "properties": {"past_is_done": {"type": "boolean"}, "capitalised_nouns": {"type": "boolean"},
                                   "head_last": {"type": "boolean"},
                                   "window": {"type": "integer", "minimum": 1, "maximum": 20}}},
        "done": _section(ACTIONS),
        "past": _section(ACTIONS),
        "first_person_past": _section(ACTIONS),
        "subjects": _section(("first_person", "past_subjects", "other_persons", "pronouns", "everything", "self"),
                             ("first_person", "other_persons", "pronouns")),
        "auxiliaries": _section(("perfect_first", "perfect", "pluperfect", "passive", "state_passive",
                                 "adverb_passive", "state_adverbs"), ("perfect", "passive")),
        "guards": _section(("negation", "object_negation", "neutral", "modal", "conditional", "habitual", "request",
                            "infinitive", "imperatives"), ("negation", "modal", "conditional")),
        "clauses": _section(("breaks", "coordinators", "alternatives", "questions"), ("breaks", "coordinators")),
        "phrases": _section(("determiners", "prepositions", "with", "new", "by_agent", "adverbs"),
                            ("determiners", "prepositions")),
        "time": _section(("earlier", "moments", "recent"), ("earlier",)),
        "state": _section(("completion", "now", "verbs"), ("completion", "now", "verbs")),
        "objects": {"type": "object", "additionalProperties": WORDS},
        "soft_objects": {"type": "object", "additionalProperties": WORDS},
        "numbers": {"type": "object", "propertyNames": {"pattern": "^[0-9]{1,4}$"}, "additionalProperties": WORDS},
        "contractions": {"type": "object", "additionalProperties": False, "properties": {
            "prefixes": {"type": "array", "items": {"type": "string", "pattern": "^[^ ']+'$"}},
            "suffixes": {"type": "array", "items": {"type": "string", "pattern": "^[^ ']*'[^ ']*$"}},
            "words": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "lists": _section(("change_headers", "data_statuses")),
        "signals": _section(("unfinished", "inability", "mode", "switch_mode", "handoff", "second_person",
                             "handoff_imperatives", "proposal")),
    },
}

KINDS_TABLE: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["actions", "never_applied", "objects", "support", "tools", "tool_verbs"],
    "properties": {
        "actions": {"type": "array", "items": {"enum": list(ACTIONS)}},
        "never_applied": WORDS,
        "objects": {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": False,
            "properties": {"in": {"type": "string"}, "named_by_container": {"type": "boolean"}}}},
        "action_objects": {"type": "object", "propertyNames": {"enum": list(ACTIONS)}, "additionalProperties": WORDS},
        "kind_actions": {"type": "object", "additionalProperties": {"type": "array", "items": {"enum": list(ACTIONS)}}},
        "forced_objects": {"type": "object", "propertyNames": {"enum": list(ACTIONS)},
                           "additionalProperties": {"type": "string"}},
        "support": {"type": "object", "propertyNames": PAIR, "additionalProperties": {"type": "array", "items": PAIR}},
        "tools": {"type": "object", "additionalProperties": PAIR},
        "places": {"type": "object", "additionalProperties": PAIR},
        "tool_verbs": {"type": "object", "propertyNames": {"enum": list(ACTIONS)}, "additionalProperties": WORDS},
    },
}
