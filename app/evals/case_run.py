"""Run one case inside its disposable app: fixture, conversation, the real turn(s) over its transport, then read
what it left.

The case is set up in its database (the evaluator, the model configuration, the agent, the fixture), its
placeholders are filled in (app/evals/placeholders.py), then each message goes through the case's client
(app/evals/transports.py) outside any app context, as a real client's requests would, and what the
database holds at the end is read back.
"""

from __future__ import annotations

import functools
import secrets
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from flask import Flask
from werkzeug.security import generate_password_hash

from app.api.tokens import create_token
from app.evals import recording
from app.evals.checks import CaseOutcome
from app.evals.dataset import Accept, Case
from app.evals.fixtures import create_knowledge, create_tables, skills_for
from app.evals.placeholders import resolve
from app.evals.scripted import scripted_model
from app.evals.scripted_server import MODEL, ScriptedServer
from app.evals.transports import AguiClient, ApiClient, DirectClient, HtmxClient
from app.extensions import db
from app.models import Agent, ModelConfig, PendingCall, Run, User
from app.models.chat import WAITING
from app.runtime import providers
from app.seed import ensure_defaults

MODEL_FIELDS = ("provider", "model_name", "base_url", "api_key_env", "context_window", "max_tokens",
                "temperature", "timeout", "retries", "profiles")
EVALUATOR = "evaluator@example.org"


def model_settings(config: ModelConfig | None) -> dict[str, Any]:
    """A model configuration's settings as a run records them (the key's variable name, never a key)."""
    if config is None:
        return {}
    return {"name": config.name, **{name: getattr(config, name) for name in MODEL_FIELDS}}


@functools.cache
def _credentials() -> tuple[str, str]:
    """The evaluator's password for this process and its hash, for the htmx client's sign-in.

    The evaluator exists only in disposable databases and its password is random and never leaves the
    process: one round of PBKDF2 spares each case the half second a real password's hash costs.
    """
    password = secrets.token_urlsafe(18)
    return password, generate_password_hash(password, method="pbkdf2:sha256:1")


@dataclass
class SetUp:
    """What a case's setup left for its messages: the filled-in case and the ids its client needs."""

    case: Case
    user_id: int
    agent_id: int
    token: str
    provider: str | None


def _model_config(case: Case, live: dict[str, Any] | None, server: ScriptedServer | None) -> ModelConfig:
    """The case's model in its database: scripted, provider (the scripted server), offline, or live (level 2)."""
    if live is not None:
        return ModelConfig(**{k: v for k, v in live.items() if k in MODEL_FIELDS}, name="evaluated")
    if case.model == "offline":
        return ModelConfig(name="offline", provider="offline", model_name="skilldesk-offline", profiles={})
    if case.model == "provider":
        if server is None:
            raise ValueError("a provider case needs the scripted server")
        # A verifier profile when the case scripts the verifier (app/runtime/verifier.py asks it then).
        profiles = {"verifier": {"timeout": 20}} if case.verifier else {}
        return ModelConfig(name="Scripted server", provider="openai-compatible", model_name=MODEL,
                           base_url=server.base_url, context_window=32_000, timeout=30, retries=0, profiles=profiles)
    provider = f"eval-scripted-{uuid.uuid4().hex}"
    return ModelConfig(name=provider, provider=provider, model_name=provider, profiles={})


def _set_up(case: Case, agent: dict[str, Any], live: dict[str, Any] | None, server: ScriptedServer | None) -> SetUp:
    config = _model_config(case, live, server)
    user = User(email=EVALUATOR, name="Evaluator", role="admin", active=True, preferences={},
                password_hash=_credentials()[1])
    skills = skills_for(case, case.skills if case.skills is not None else agent["skills"])
    limit = case.limits.max_requests or agent["max_requests"]
    row = Agent(name=agent["name"], description=agent["description"], instructions=agent["instructions"],
                roles=["admin", "user"], skills=skills, max_requests=limit, model_config=config)
    db.session.add_all([user, config, row])
    db.session.flush()
    ensure_defaults()  # what a fresh install holds besides (the docs knowledge base the assistant names)
    db.session.commit()
    pages = f"{server.origin}/pages" if server is not None else None
    ids = create_tables(case, pages)
    filled = Case.model_validate(resolve(case.model_dump(mode="json", exclude_unset=True), ids, pages))
    if server is not None:
        server.load(filled.replies, filled.pages, filled.verifier)
    provider = None
    if config.provider.startswith("eval-scripted-"):
        provider = config.provider
        model = scripted_model(filled.replies)
        providers.register_provider(provider, lambda _spec: model)
    if filled.never_ask:  # the admin's visible, audited setting
        row.never_ask = {"tools": list(filled.never_ask), "set_by": "evaluation admin"}
    create_knowledge(filled)
    _token, secret = create_token(user, "evaluation", "chat", 7)
    db.session.commit()
    return SetUp(filled, user.id, row.id, secret, provider)


def _client(transport: str, app: Flask, setup: SetUp, timeout: float) -> Any:
    if transport == "api":
        return ApiClient(app, setup.token, timeout)
    if transport == "agui":
        return AguiClient(app, setup.token, timeout)
    if transport == "htmx":
        return HtmxClient(app, EVALUATOR, _credentials()[0], timeout)
    return DirectClient(app, setup.user_id, timeout)


def run_case(app: Flask, case: Case, agent: dict[str, Any], live_model: dict[str, Any] | None, timeout: float,
             transport: str = "direct", server: ScriptedServer | None = None
             ) -> tuple[CaseOutcome, list[dict[str, Any]]]:
    """Run the case over a transport on the app's (disposable) database; return its outcome and its transcript."""
    outcome = CaseOutcome(transport=transport)
    transcript: list[dict[str, Any]] = []
    started = time.monotonic()
    setup = None
    try:
        with app.app_context():
            setup = _set_up(case, agent, live_model, server)
            outcome.case = setup.case
            outcome.rows_before = recording.state()[0]
        client = _client(transport, app, setup, timeout)
        conversation_id = client.start(setup.agent_id)
        proposals: list[dict[str, Any]] = []
        for step in setup.case.steps:
            if isinstance(step, Accept):
                client.accept(proposals)
                continue
            before = _preferences(app, setup.user_id)
            seen = client.send(step, setup.case.page_context)
            outcome.seen.append(asdict(seen))
            outcome.preferences_changed += int(_preferences(app, setup.user_id) != before)
            proposals = seen.proposals
            if seen.run_id is not None and _run_status(app, seen.run_id) != "succeeded":
                break
        with app.app_context():
            runs = [turn["run_id"] for turn in outcome.seen if turn.get("run_id")]
            _read(outcome, transcript, conversation_id, setup.user_id, runs[-1] if runs else None)
        if server is not None and setup.case.model == "provider":
            outcome.sent = server.last_request_text()
    except Exception as error:  # a broken fixture or an unfinished wait is the case's failure, recorded
        outcome.status, outcome.error = "error", f"{type(error).__name__}: {error}"
    finally:
        if setup is not None and setup.provider:
            providers.register_provider(setup.provider, None)
    outcome.seconds = time.monotonic() - started
    return outcome, transcript


def _preferences(app: Flask, user_id: int) -> dict[str, Any]:
    with app.app_context():
        return recording.preferences(user_id)


def _run_status(app: Flask, run_id: str | None) -> str:
    with app.app_context():
        return db.session.scalar(db.select(Run.status).where(Run.id == run_id)) or ""


def _read(outcome: CaseOutcome, transcript: list[dict[str, Any]], conversation_id: int, user_id: int,
          last_run: str | None) -> None:
    """Read what the case left: its messages and runs, the rows, the context, the audit, the preferences."""
    for message in recording.messages(conversation_id):
        entry = {"role": message.role, "content": message.content, "steps": message.steps,
                 "meta": message.meta or {}}
        if (message.meta or {}).get("pending"):  # the report says what the turn waits for
            entry["waiting"] = [{"kind": item.get("kind"), "tool": item.get("tool")}
                                for item in message.meta["pending"]]
        transcript.append(entry)
        if message.role in ("assistant", "notice"):
            outcome.shown.append(message.content)
        if message.role == "assistant":
            outcome.answer, outcome.meta = message.content, dict(message.meta or {})
            outcome.steps += list(message.steps or [])
    runs = db.session.scalars(db.select(Run).where(Run.conversation_id == conversation_id)).all()
    last = next((run for run in runs if run.id == last_run), None)
    if last is not None:
        outcome.status, outcome.error = last.status, last.error
        if last.status == WAITING:  # the report says what the case's run waits for, and which calls
            outcome.error = f"it waits for {last.waiting_for}: " + ", ".join(db.session.scalars(
                db.select(PendingCall.tool_name).where(PendingCall.run_id == last.id, PendingCall.status == "pending")))
    outcome.requests = sum(run.requests for run in runs)
    outcome.input_tokens = sum(run.input_tokens for run in runs)
    outcome.output_tokens = sum(run.output_tokens for run in runs)
    outcome.rows, outcome.tables = recording.state()
    outcome.context = recording.context_text(conversation_id)
    outcome.audit = recording.audit(conversation_id)
    outcome.preferences = recording.preferences(user_id)
