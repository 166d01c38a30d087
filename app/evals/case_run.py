"""Run one case inside its disposable app: fixture, conversation, the real turn(s), then read what it left."""

from __future__ import annotations

import time
import uuid
from typing import Any

from flask import Flask
from sqlalchemy import inspect, select

from app.assistance.context import parse_context
from app.chat import turns
from app.evals.checks import CaseOutcome
from app.evals.dataset import Case
from app.evals.fixtures import create_knowledge, create_tables, skills_for
from app.evals.scripted import scripted_model
from app.extensions import db
from app.models import Agent, DataTable, Message, ModelConfig, PendingCall, Run, User
from app.models.chat import WAITING
from app.runtime import execution, providers
from app.seed import ensure_defaults
from app.tables import schema

MODEL_FIELDS = ("provider", "model_name", "base_url", "api_key_env", "context_window", "max_tokens",
                "temperature", "timeout", "retries", "profiles")


def model_settings(config: ModelConfig | None) -> dict[str, Any]:
    """A model configuration's settings as a run records them (the key's variable name, never a key)."""
    if config is None:
        return {}
    return {"name": config.name, **{name: getattr(config, name) for name in MODEL_FIELDS}}


def _model_config(case: Case, live: dict[str, Any] | None) -> ModelConfig:
    """The case's model in its database: scripted, the built-in offline model, or the live one (level 2)."""
    if live is not None:
        return ModelConfig(**{k: v for k, v in live.items() if k in MODEL_FIELDS}, name="evaluated")
    if case.model == "offline":
        return ModelConfig(name="offline", provider="offline", model_name="skilldesk-offline", profiles={})
    provider = f"eval-scripted-{uuid.uuid4().hex}"
    model = scripted_model(case.replies)
    providers.register_provider(provider, lambda _spec: model)
    return ModelConfig(name=provider, provider=provider, model_name=provider, profiles={})


def _state() -> tuple[dict[str, list[dict[str, Any]]], set[str]]:
    names = set(db.session.scalars(select(DataTable.name)))
    rows: dict[str, list[dict[str, Any]]] = {}
    for definition in db.session.scalars(select(DataTable)):
        rows[definition.name] = [dict(r) for r in db.session.execute(
            select(schema.sql_table(definition))).mappings()]
    # A table made outside the tables' definitions (raw SQL) counts too.
    names |= set(inspect(db.engine).get_table_names())
    return rows, names


def run_case(app: Flask, case: Case, agent: dict[str, Any], live_model: dict[str, Any] | None,
             timeout: float) -> tuple[CaseOutcome, list[dict[str, Any]]]:
    """Run the case on the app's (disposable) database; return its outcome and its transcript."""
    outcome = CaseOutcome()
    transcript: list[dict[str, Any]] = []
    started = time.monotonic()
    provider = None
    with app.app_context():
        config = _model_config(case, live_model)
        provider = config.provider if config.provider.startswith("eval-scripted-") else None
        user = User(email="evaluator@example.invalid", name="Evaluator", role="admin", active=True,
                    preferences={}, password_hash="!")
        skills = skills_for(case, case.skills if case.skills is not None else agent["skills"])
        limit = case.limits.max_requests or agent["max_requests"]
        row = Agent(name=agent["name"], description=agent["description"], instructions=agent["instructions"],
                    roles=["admin", "user"], skills=skills, max_requests=limit, model_config=config)
        db.session.add_all([user, config, row])
        db.session.flush()
        ensure_defaults()  # what a fresh install holds besides (the docs knowledge base the assistant names)
        db.session.commit()
        try:
            create_tables(case)
            create_knowledge(case)
            conversation = turns.start_conversation(user, row, title="Evaluation")
            db.session.commit()
            extras = parse_context(case.page_context, user.role).as_extras() if case.page_context else None
            for text in case.messages:
                _message, run = turns.send_message(conversation, user, text, extras=extras)
                execution.wait(run.id, timeout)
                db.session.expire_all()
                run = db.session.get(Run, run.id)
                outcome.status, outcome.error = run.status, run.error
                if run.status == WAITING:  # the report says what the case's run waits for, and which calls
                    outcome.error = f"it waits for {run.waiting_for}: " + ", ".join(db.session.scalars(
                        db.select(PendingCall.tool_name).where(PendingCall.run_id == run.id,
                                                               PendingCall.status == "pending")))
                outcome.requests += run.requests
                outcome.input_tokens += run.input_tokens
                outcome.output_tokens += run.output_tokens
                if run.status != "succeeded":
                    break
            for message in db.session.scalars(select(Message).where(Message.conversation_id == conversation.id)
                                              .order_by(Message.id)):
                entry = {"role": message.role, "content": message.content, "steps": message.steps}
                if (message.meta or {}).get("pending"):
                    entry["waiting"] = [{"kind": item.get("kind"), "tool": item.get("tool")}
                                        for item in message.meta["pending"]]
                transcript.append(entry)
                if message.role == "assistant":
                    outcome.answer = message.content
                    outcome.steps += list(message.steps or [])
            outcome.rows, outcome.tables = _state()
        except Exception as error:  # a broken fixture or an unfinished wait is the case's failure, recorded
            outcome.status, outcome.error = "error", f"{type(error).__name__}: {error}"
        finally:
            if provider:
                providers.register_provider(provider, None)
    outcome.seconds = time.monotonic() - started
    return outcome, transcript
