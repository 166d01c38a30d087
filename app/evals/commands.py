"""`flask eval run DATASET --agent NAME [--model CONFIG] [--level 1|2]`: run a dataset and print its figures;
`flask eval honesty`: run every dataset of `evals/honesty/` and print the honesty figures."""

from __future__ import annotations

import time

import click
from flask.cli import AppGroup, with_appcontext

from app.evals import honesty, library
from app.evals.dataset import DatasetInvalid
from app.evals.library import DatasetMissing
from app.evals.runner import EvalError, create_run, execute
from app.extensions import db
from app.models import EvalRun
from app.seed import WORKSPACE_ASSISTANT

eval_group = AppGroup("eval", help="Evaluations: run datasets of cases against an agent.")


def _run(dataset: str, agent_name: str | None, level: int = 1, model_name: str | None = None) -> EvalRun:
    """Run a dataset against the agent (None: the one the dataset names, else the Workspace assistant)."""
    try:
        agent_name = agent_name or library.load(dataset).agent or WORKSPACE_ASSISTANT
        run = create_run(dataset, agent_name, level, model_name)
    except DatasetInvalid as error:
        raise click.UsageError(f"the dataset {dataset} is invalid:\n  " + "\n  ".join(str(e) for e in error.errors)
                               ) from None
    except (EvalError, DatasetMissing) as error:
        raise click.UsageError(str(error)) from None
    db.session.commit()
    return execute(run.id)


def _print(run: EvalRun, seconds: float) -> None:
    for result in run.results:
        mark = "PASS" if result.passed else "FAIL"
        click.echo(f"{mark} {result.case_id} ({result.seconds:.2f} s)")
        for verdict in result.failures:
            click.echo(f"     {verdict['check']}: {verdict['detail']}")
    skipped = run.population.get("skipped", [])
    click.echo(f"run {run.id}: {run.passed}/{run.done} passed ({run.pass_rate:.0%}), {len(skipped)} skipped, "
               f"{seconds:.1f} s; source {run.source_revision[:12]}, config {run.config_revision[:12]}")


@eval_group.command("run")
@click.argument("dataset")
@click.option("--agent", "agent_name", required=True, help="The agent's name.")
@click.option("--model", "model_name", default=None, help="A model configuration's name (level 2).")
@click.option("--level", type=click.IntRange(1, 2), default=1, show_default=True,
              help="1: scripted replies or the offline model; 2: a live model.")
@with_appcontext
def run_command(dataset: str, agent_name: str, model_name: str | None, level: int) -> None:
    """Run a dataset against an agent, each case on a disposable database; exit 1 when a case fails."""
    started = time.monotonic()
    run = _run(dataset, agent_name, level, model_name)
    _print(run, time.monotonic() - started)
    facts = honesty.measured([run])
    if facts:
        lines, _met = honesty.report(facts)
        click.echo("\n".join(lines))
    if run.passed != run.done or run.status != "finished":
        raise SystemExit(1)


@eval_group.command("honesty")
@click.option("--agent", "agent_name", default=None,
              help="The agent to run them on (default: the one each dataset names, else the Workspace assistant).")
@click.option("--quiet", is_flag=True, help="Print the figures only, not each case.")
@with_appcontext
def honesty_command(agent_name: str | None, quiet: bool) -> None:
    """Run every dataset of evals/honesty/ at level 1 and print the honesty figures; exit 1 on a missed target."""
    names = library.names(honesty.FOLDER)
    if not names:
        raise click.UsageError(f"There is no dataset in {library.folder() / honesty.FOLDER}.")
    runs = []
    for name in names:
        started = time.monotonic()
        run = _run(name, agent_name)
        runs.append(run)
        if not quiet:
            click.echo(f"# {name}")
            _print(run, time.monotonic() - started)
    lines, met = honesty.report(honesty.measured(runs))
    click.echo("\n".join(lines))
    passed, done = sum(run.passed for run in runs), sum(run.done for run in runs)
    click.echo(f"cases: {passed}/{done} passed")
    if not met:
        raise SystemExit(1)
