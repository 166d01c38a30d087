"""Evaluation runs: choose the case population, run each case on a disposable database, record it all."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from flask import current_app

from app.evals import honesty, library
from app.evals.case_run import model_settings, run_case
from app.evals.checks import CaseOutcome, evaluate
from app.evals.dataset import Case, Dataset
from app.evals.recording import data_changes
from app.evals.sandbox import Sandbox
from app.evals.scripted_server import ScriptedServer
from app.extensions import db, jobs
from app.models import Agent, EvalCaseResult, EvalRun, ModelConfig
from app.models.base import utcnow

CASE_TIMEOUT = 120.0


class EvalError(Exception):
    """The run cannot start: unknown agent, model or dataset (the message says which)."""


def source_revision() -> str:
    """The git revision of the code that runs, or "unknown" outside a checkout."""
    root = Path(current_app.root_path).parent
    try:
        found = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                               timeout=5, check=False)
    except OSError:
        return "unknown"
    revision = found.stdout.strip()
    return revision if found.returncode == 0 and revision else "unknown"


def agent_snapshot(agent: Agent) -> dict[str, Any]:
    """The agent's configuration as a case copies it into its database."""
    return {"name": agent.name, "description": agent.description, "instructions": agent.instructions,
            "skills": agent.skills or [], "max_requests": agent.max_requests,
            "model": model_settings(agent.model_config)}


def config_revision(snapshot: dict[str, Any]) -> str:
    """SHA-256 of the agent's configuration: two runs on the same revision ran the same agent."""
    return hashlib.sha256(json.dumps(snapshot, sort_keys=True, default=str).encode()).hexdigest()


def population(dataset: Dataset, level: int) -> tuple[list[Case], list[dict[str, str]]]:
    """The cases a run at this level runs, and the skipped ones with the reason."""
    chosen, skipped = [], []
    for case in dataset.cases:
        if case.skip:
            skipped.append({"case": case.id, "reason": case.skip})
        elif level == 1 and case.model == "agent":
            skipped.append({"case": case.id, "reason": "needs a live model (level 2)"})
        else:
            chosen.append(case)
    return chosen, skipped


def create_run(dataset_name: str, agent_name: str, level: int = 1, model_name: str | None = None,
               user_id: int | None = None) -> EvalRun:
    """Validate the request and store a queued run with its population and revisions; the caller commits."""
    dataset = library.load(dataset_name)
    agent = db.session.scalar(db.select(Agent).where(Agent.name == agent_name))
    if agent is None:
        raise EvalError(f"There is no agent named {agent_name!r}.")
    if level not in (1, 2):
        raise EvalError("The level is 1 (scripted) or 2 (live).")
    snapshot = agent_snapshot(agent)
    if model_name:
        config = db.session.scalar(db.select(ModelConfig).where(ModelConfig.name == model_name))
        if config is None:
            raise EvalError(f"There is no model configuration named {model_name!r}.")
        snapshot["model"] = model_settings(config)
    if level == 2 and not snapshot["model"]:
        raise EvalError("The agent has no model configuration: pass --model for a level-2 run.")
    cases, skipped = population(dataset, level)
    model = snapshot["model"] if level == 2 else {"name": "level 1: scripted replies or the built-in offline model",
                                                   "per_case": {c.id: c.model for c in cases}}
    run = EvalRun(dataset=dataset_name, agent_id=agent.id, agent_name=agent.name, level=level,
                  source_revision=source_revision(), config_revision=config_revision(snapshot), model=model,
                  population={"cases": [c.id for c in cases], "total": len(dataset.cases), "skipped": skipped,
                              "agent": snapshot, "transports": {c.id: c.transports for c in cases}},
                  total=sum(len(c.transports) for c in cases), created_by=user_id)
    db.session.add(run)
    return run


def execute(run_id: int) -> EvalRun:
    """Run every case of the run's population, each on its own disposable database, storing each result."""
    run = db.session.get(EvalRun, run_id)
    app = current_app._get_current_object()
    dataset = library.load(run.dataset)
    by_id = {case.id: case for case in dataset.cases}
    snapshot = run.population["agent"]
    live = run.model if run.level == 2 else None
    run.status, run.started_at = "running", utcnow()
    db.session.commit()
    sandbox = Sandbox(app)
    # One scripted OpenAI-compatible server for the run, started when a case needs it (provider, pages).
    server: ScriptedServer | None = None
    try:
        for case_id in run.population["cases"]:
            case = by_id.get(case_id)
            if case is None:
                continue
            needs_server = bool(case.pages) or (live is None and case.model == "provider")
            if needs_server and server is None:
                server = ScriptedServer()
            for result_id, transport in zip(case.run_ids(), case.transports, strict=True):
                with sandbox.case(case_id, allow_local=needs_server, views=transport != "direct") as case_app:
                    outcome, transcript = run_case(case_app, case, snapshot, live, CASE_TIMEOUT, transport,
                                                   server if needs_server else None)
                _store(run, case, result_id, outcome, transcript)
        run.status = "finished"
    except Exception as error:  # recorded on the run, then raised again for the job's log
        db.session.rollback()
        run.status, run.error = "failed", f"{type(error).__name__}: {error}"
        raise
    finally:
        run.finished_at = utcnow()
        db.session.commit()
        sandbox.close()
        if server is not None:
            server.close()
    return run


def _store(run: EvalRun, case: Case, result_id: str, outcome: CaseOutcome, transcript: list[dict[str, Any]]) -> None:
    """Judge one run of a case and store it with what it observed; commit, so the run's page shows progress."""
    case = outcome.case or case  # the checks name the tables' ids and the pages as the run filled them in
    verdicts = [v.as_dict() for v in evaluate(case, outcome)]
    passed = all(v["passed"] for v in verdicts)
    measured = honesty.facts(case, outcome)
    observed = {"transport": outcome.transport, "seen": outcome.seen, "meta": outcome.meta,
                "receipt": outcome.meta.get("receipt"), "waiting": outcome.last.get("waiting") or [],
                "data_changes": data_changes(outcome.rows_before, outcome.rows),
                "preferences_changed": outcome.preferences_changed,
                "honesty": measured.as_dict() if measured else None}
    db.session.add(EvalCaseResult(
        run_id=run.id, case_id=result_id, passed=passed, status=outcome.status, transcript=transcript,
        steps=outcome.steps, errors=[outcome.error] if outcome.error else [], verdicts=verdicts,
        input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
        requests=outcome.requests, seconds=round(outcome.seconds, 3), observed=observed))
    run.done += 1
    run.passed += int(passed)
    db.session.commit()


@jobs.task()
def run_evaluation(run_id: int) -> None:
    """The background job of an evaluation run."""
    execute(run_id)
