"""Datasets of evaluation cases: the file format (YAML or JSON), validated case by case.

A dataset is a mapping with a `name`, an optional `description`, defaults for its cases (`model`,
`transport`) and a list of `cases`. Each case has an `id`, a `prompt` (or a short multi-turn `script`
of user messages and clicks), optional `page_context`, a `fixture` (tables and rows created in the
case's disposable database), `knowledge` (knowledge bases indexed there, with their vectors in the
case's own vector store), `pages` (served on 127.0.0.1 for the case), `checks`, `limits`, an
`honesty` label, and for level 1 a scripted model: `replies` given to a FunctionModel
(`model: scripted`) or to a scripted OpenAI-compatible server behind a real provider configuration
(`model: provider`), or the built-in offline model (`model: offline`). The case runs over a
`transport`: the runtime itself, or a client of the JSON API, the htmx chat or AG-UI. Every field is
documented in docs/evals.md.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from app.evals.expectations import Checks, Honesty, Limits, Strict, one_or_more

Model = Literal["scripted", "provider", "offline", "agent"]
Transport = Literal["direct", "api", "htmx", "agui"]
# What a dataset may set for all of its cases (a case's own value wins).
CASE_DEFAULTS = ("model", "transport")


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
    """One scripted model response: tool calls, or text (or both: text is sent with the calls), or an error."""

    text: str = ""
    """Text the model answers (with `status`: the provider's error message)."""
    calls: list[ToolCall] = []
    """Tool calls the model makes; the next reply comes after their results."""
    status: int | None = Field(default=None, ge=400, le=599)
    """The provider answers this request with this HTTP error status instead."""


class Accept(Strict):
    """A click of the user between two messages of a script."""

    accept: Literal["proposals"]
    """proposals: accept every proposal of the last answer, as the transport's client does (the card's form
    in the htmx chat, PATCH /api/me/preferences over the JSON API and AG-UI)."""


class Case(Strict):
    id: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_.-]+$")
    """A unique id (letters, digits, `_ . -`)."""
    description: str = ""
    prompt: str | None = None
    """The user's message."""
    script: list[str | Accept] = []
    """A short multi-turn script: the user's messages in order (instead of `prompt`), and clicks between them."""
    page_context: dict[str, Any] | None = None
    """A page context sent with the message, as the chat page sends it."""
    fixture: list[FixtureTable] = []
    """Tables and rows created before the case runs."""
    knowledge: list[KnowledgeFixture] = []
    """Knowledge bases with their documents, indexed in the case's database before the case runs."""
    pages: dict[str, str] = {}
    """Pages served on 127.0.0.1 while the case runs, name → HTML or text, at `{pages}/<name>`."""
    model: Model = "scripted"
    """scripted: `replies` drive a FunctionModel; provider: `replies` are what a scripted OpenAI-compatible
    server answers, behind a real model configuration (the provider path); offline: the built-in offline
    model; agent: the agent's own model (level 2 only)."""
    replies: list[Reply] = []
    """The scripted model's responses in order; after the last, the FunctionModel reports the tools' results
    and the scripted server answers a fixed short text."""
    verifier: list[Reply] = []
    """What the verifier answers (`model: provider`), in order, each time the answer review asks it; the model
    configuration then has a verifier profile. After the last, an answer out of schema."""
    transport: list[Transport] = []
    """How the messages are sent: direct (the runtime, no client: the default), api (the JSON API with a
    personal token), htmx (the chat page's form and its event stream), agui (the AG-UI stream); a list runs
    the case once over each."""
    never_ask: list[str] = []
    """Destructive tools the admin set to "never ask" for the agent under test (audited)."""
    honesty: Honesty | None = None
    """What the case measures for the honesty figures (kind, language, claims, what to keep)."""
    skills: list[dict[str, Any]] | None = None
    """Skills for this case instead of the agent's (name + config), e.g. to test one skill."""
    checks: Checks = Checks()
    limits: Limits = Limits()
    skip: str | None = None
    """A reason to skip the case (recorded in the run's population)."""

    _one_transport = field_validator("transport", mode="before")(one_or_more)

    @model_validator(mode="after")
    def _one_prompt(self) -> Case:
        if bool(self.prompt) == bool(self.script):
            raise ValueError("give either a prompt or a script of user messages, not both or neither")
        if len(self.messages) > 5:
            raise ValueError("a script has at most 5 user messages")
        if self.script and not isinstance(self.script[0], str):
            raise ValueError("a script begins with a message of the user")
        names = [kb.name for kb in self.knowledge]
        if len(set(names)) != len(names):
            raise ValueError("two knowledge bases of the case have the same name")
        if len(set(self.transport)) != len(self.transport):
            raise ValueError("a transport is named twice")
        if self.verifier and self.model != "provider":
            raise ValueError("verifier replies are what the scripted server answers: give the case model: provider")
        return self

    @property
    def steps(self) -> list[str | Accept]:
        """The user's messages and clicks, in order."""
        return list(self.script) if self.script else [self.prompt or ""]

    @property
    def messages(self) -> list[str]:
        """The user's messages, in order."""
        return [step for step in self.steps if isinstance(step, str)]

    @property
    def transports(self) -> list[str]:
        """The transports the case runs over (direct when it names none)."""
        return list(self.transport) or ["direct"]

    def run_ids(self) -> list[str]:
        """The id of each of the case's runs: the case's id, with `@transport` when it runs over several."""
        transports = self.transports
        return [self.id] if len(transports) == 1 else [f"{self.id}@{name}" for name in transports]


class Dataset(Strict):
    name: str = Field(min_length=1, max_length=80)
    description: str = ""
    agent: str | None = None
    """The agent the dataset was written for (the default of `make test` and of the admin page)."""
    model: Model | None = None
    """The model of every case that names none."""
    transport: list[Transport] = []
    """The transports of every case that names none."""
    cases: list[Case]

    _one_transport = field_validator("transport", mode="before")(one_or_more)


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
    header = {k: v for k, v in data.items() if k != "cases"}
    try:
        Dataset.model_validate({**header, "cases": []})
    except ValidationError as error:
        errors += [CaseError(case="-", path=".".join(str(p) for p in e["loc"]), reason=e["msg"])
                   for e in error.errors()]
    # The dataset's defaults (model, transport) go to every case that does not set its own.
    defaults = {key: header[key] for key in CASE_DEFAULTS if header.get(key) is not None} if not errors else {}
    raw_cases = data.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        errors.append(CaseError(case="-", path="cases", reason="list at least one case"))
        raw_cases = []
    raw_cases = [{**defaults, **raw} if isinstance(raw, dict) else raw for raw in raw_cases]
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
    if errors:
        raise DatasetInvalid(errors)
    return Dataset.model_validate({**data, "cases": raw_cases})


def dump_json(dataset: Dataset) -> str:
    """Return the dataset as JSON (for export)."""
    return json.dumps(dataset.model_dump(mode="json", exclude_defaults=True), indent=2)
