"""Datasets of evaluation cases: the file format (YAML or JSON), validated case by case.

A dataset is a mapping with a `name`, an optional `description` and a list of `cases`. Each case
has an `id`, a `prompt` (or a short multi-turn `script` of user messages), optional `page_context`,
a `fixture` (tables and rows created in the case's disposable database), `knowledge` (knowledge bases
indexed there, with their vectors in the case's own vector store), `checks`, `limits`, and
for level 1 a scripted model (`model: scripted` with `replies`) or the built-in offline model
(`model: offline`). Every field is documented in docs/evals.md.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FixtureField(Strict):
    name: str
    """The field's name (lower case, as a table's field name)."""
    kind: str = "text"
    """One of the tables' field kinds (text, long_text, integer, decimal, boolean, date, choice, …)."""
    choices: list[str] = []
    """The choices of a `choice` field."""


class FixtureTable(Strict):
    name: str
    """The table's name."""
    label: str = ""
    """The table's label (defaults to the name)."""
    fields: list[FixtureField] = []
    """The table's fields, created in order."""
    rows: list[dict[str, Any]] = []
    """Rows inserted after the fields exist: field name → value."""


class KnowledgeDocumentFixture(Strict):
    title: str = Field(min_length=1, max_length=300)
    """The document's title (what a citation names)."""
    text: str = Field(min_length=1)
    """The document's text, cut into passages and indexed as an uploaded document would be."""


class KnowledgeFixture(Strict):
    name: str = Field(min_length=1, max_length=80)
    """The knowledge base's name."""
    roles: list[str] = ["admin", "user"]
    """The roles that may search it (the evaluator is an admin)."""
    documents: list[KnowledgeDocumentFixture] = Field(min_length=1)
    """Its documents, indexed (passages, lexical rows and vectors) in the case's database and vector store."""
    skill: bool = True
    """Give the agent under test the knowledge skill searching the case's knowledge bases (added if it has
    none; an existing knowledge skill keeps its other settings)."""


class ToolCall(Strict):
    tool: str
    """The tool's name."""
    args: dict[str, Any] = {}
    """The arguments the scripted model sends."""


class Reply(Strict):
    """One scripted model response: tool calls, or text (or both: text is sent with the calls)."""

    text: str = ""
    """Text the model answers."""
    calls: list[ToolCall] = []
    """Tool calls the model makes; the next reply comes after their results."""


class AnswerChecks(Strict):
    contains: list[str] = []
    """Each string must appear in the final answer (case-insensitive)."""
    not_contains: list[str] = []
    """No string may appear in the final answer (case-insensitive)."""
    regex: list[str] = []
    """Each regular expression must match the final answer."""
    no_unsupported_success: bool = False
    """The answer claims no success (applied, created, saved, done…) unless a tool step succeeded."""
    cites_only_retrieved: bool = False
    """Every cited source ([n] or a quoted document title) was returned by a tool in this run."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"{pattern!r} is not a regular expression: {error}") from None
        return patterns


class RowCheck(Strict):
    table: str
    """The table that must hold the row."""
    values: dict[str, Any] = {}
    """Field name → value the row has (compared as text)."""


class StateChecks(Strict):
    rows_exist: list[RowCheck] = []
    """Rows that must exist after the case."""
    no_table: list[str] = []
    """Table names that must not exist after the case."""


class MaxCalls(Strict):
    tool: str = "*"
    """The tool counted, or "*" for every tool."""
    at_most: int = Field(ge=0)
    """The most calls allowed."""


class ToolResultCheck(Strict):
    tool: str = Field(min_length=1)
    """The tool whose results are read, or "*" for every tool."""
    contains: list[str] = []
    """Each string appears in one of the tool's results (case-insensitive); a string is one item."""
    not_contains: list[str] = []
    """No result of the tool contains any of these strings (case-insensitive)."""

    @field_validator("contains", "not_contains", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _something_to_check(self) -> ToolResultCheck:
        if not self.contains and not self.not_contains:
            raise ValueError("give contains or not_contains (or both)")
        return self


class ToolChecks(Strict):
    called: list[str] = []
    """Tools that must have been called (successfully or not)."""
    not_called: list[str] = []
    """Tools that must not have been called."""
    max_calls: list[MaxCalls] = []
    """Bounds on the number of calls."""
    results: list[ToolResultCheck] = []
    """What the tools' results say (successful or failed steps alike); the tool must have been called."""


class Checks(Strict):
    answer: AnswerChecks = AnswerChecks()
    state: StateChecks = StateChecks()
    tools: ToolChecks = ToolChecks()


class Limits(Strict):
    max_requests: int | None = Field(default=None, ge=1)
    """The most model requests the case may take (also the run's cap)."""
    max_tool_errors: int | None = Field(default=None, ge=0)
    """The most failed tool steps allowed."""
    max_seconds: float | None = Field(default=None, gt=0)
    """The most seconds the case may take."""


class Case(Strict):
    id: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_.-]+$")
    """A unique id (letters, digits, `_ . -`)."""
    description: str = ""
    prompt: str | None = None
    """The user's message."""
    script: list[str] = []
    """A short multi-turn script: the user's messages in order (instead of `prompt`)."""
    page_context: dict[str, Any] | None = None
    """A page context sent with the message, as the chat page sends it."""
    fixture: list[FixtureTable] = []
    """Tables and rows created before the case runs."""
    knowledge: list[KnowledgeFixture] = []
    """Knowledge bases with their documents, indexed in the case's database before the case runs."""
    model: Literal["scripted", "offline", "agent"] = "scripted"
    """scripted: `replies` drive a FunctionModel; offline: the built-in offline model;
    agent: the agent's own model (level 2 only)."""
    replies: list[Reply] = []
    """The scripted model's responses in order; after the last, it reports the tools' results."""
    skills: list[dict[str, Any]] | None = None
    """Skills for this case instead of the agent's (name + config), e.g. to test one skill."""
    checks: Checks = Checks()
    limits: Limits = Limits()
    skip: str | None = None
    """A reason to skip the case (recorded in the run's population)."""

    @model_validator(mode="after")
    def _one_prompt(self) -> Case:
        if bool(self.prompt) == bool(self.script):
            raise ValueError("give either a prompt or a script of user messages, not both or neither")
        if len(self.script) > 5:
            raise ValueError("a script has at most 5 user messages")
        names = [kb.name for kb in self.knowledge]
        if len(set(names)) != len(names):
            raise ValueError("two knowledge bases of the case have the same name")
        return self

    @property
    def messages(self) -> list[str]:
        return self.script or [self.prompt or ""]


class Dataset(Strict):
    name: str = Field(min_length=1, max_length=80)
    description: str = ""
    agent: str | None = None
    """The agent the dataset was written for (the default of `make test` and of the admin page)."""
    cases: list[Case]


class CaseError(BaseModel):
    """One problem of a dataset file: the case it is in, the path inside that case, and why."""

    case: str
    path: str
    reason: str

    def __str__(self) -> str:
        return f"case {self.case}: {self.path}: {self.reason}" if self.path else f"case {self.case}: {self.reason}"


class DatasetInvalid(Exception):
    """The dataset file has errors; `errors` lists each one."""

    def __init__(self, errors: list[CaseError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


class _Loader(yaml.SafeLoader):
    """Safe YAML without aliases: no dataset needs one, and a few nested ones expand 400 bytes into
    millions of values (shared while parsed, walked and dumped one by one when the case runs)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in a dataset",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)


def parse(text: str) -> Dataset:
    """Read a dataset from YAML (or JSON) text; raise DatasetInvalid with one error per problem."""
    try:
        data = yaml.load(text, Loader=_Loader) if text.strip() else None  # a SafeLoader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise DatasetInvalid([CaseError(case="-", path=where, reason=f"not valid YAML or JSON: "
                                        f"{getattr(error, 'problem', None) or error}")]) from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise DatasetInvalid([CaseError(case="-", path="", reason="the file is nested too deeply")]) from None
    if not isinstance(data, dict):
        raise DatasetInvalid([CaseError(case="-", path="", reason="a dataset is a mapping with name and cases")])
    errors: list[CaseError] = []
    raw_cases = data.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        errors.append(CaseError(case="-", path="cases", reason="list at least one case"))
        raw_cases = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_cases):
        label = str(raw.get("id")) if isinstance(raw, dict) and raw.get("id") else f"#{index + 1}"
        try:
            case = Case.model_validate(raw)
        except ValidationError as error:
            errors += [CaseError(case=label, path=".".join(str(p) for p in e["loc"]), reason=e["msg"])
                       for e in error.errors()]
            continue
        if case.id in seen:
            errors.append(CaseError(case=label, path="id", reason="another case has this id"))
        seen.add(case.id)
    header = {k: v for k, v in data.items() if k != "cases"}
    try:
        Dataset.model_validate({**header, "cases": []})
    except ValidationError as error:
        errors += [CaseError(case="-", path=".".join(str(p) for p in e["loc"]), reason=e["msg"])
                   for e in error.errors()]
    if errors:
        raise DatasetInvalid(errors)
    return Dataset.model_validate(data)


def dump_json(dataset: Dataset) -> str:
    """Return the dataset as JSON (for export)."""
    return json.dumps(dataset.model_dump(mode="json", exclude_defaults=True), indent=2)
