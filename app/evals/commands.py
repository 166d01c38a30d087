"""`flask eval run DATASET --agent NAME [--model CONFIG] [--level 1|2]`: run a dataset and print its figures."""

from __future__ import annotations

import time

import click
from flask.cli import AppGroup, with_appcontext

from app.evals.dataset import DatasetInvalid
from app.evals.library import DatasetMissing
from app.evals.runner import EvalError, create_run, execute
from app.extensions import db

eval_group = AppGroup("eval", help="Evaluations: run datasets of cases against an agent.")


@eval_group.command("run")
@click.argument("dataset")
@click.option("--agent", "agent_name", required=True, help="The agent's name.")
@click.option("--model", "model_name", default=None, help="A model configuration's name (level 2).")
@click.option("--level", type=click.IntRange(1, 2), default=1, show_default=True,
              help="1: scripted replies or the offline model; 2: a live model.")
@with_appcontext
def run_command(dataset: str, agent_name: str, model_name: str | None, level: int) -> None:
    """Run a dataset against an agent, each case on a disposable database; exit 1 when a case fails."""
    try:
        run = create_run(dataset, agent_name, level, model_name)
    except DatasetInvalid as error:
        raise click.UsageError("the dataset is invalid:\n  " + "\n  ".join(str(e) for e in error.errors)) from None
    except (EvalError, DatasetMissing) as error:
        raise click.UsageError(str(error)) from None
    db.session.commit()
    started = time.monotonic()
    run = execute(run.id)
    for result in run.results:
        mark = "PASS" if result.passed else "FAIL"
        click.echo(f"{mark} {result.case_id} ({result.seconds:.2f} s)")
        for verdict in result.failures:
            click.echo(f"     {verdict['check']}: {verdict['detail']}")
    skipped = run.population.get("skipped", [])
    click.echo(f"run {run.id}: {run.passed}/{run.done} passed ({run.pass_rate:.0%}), {len(skipped)} skipped, "
               f"{time.monotonic() - started:.1f} s; source {run.source_revision[:12]}, "
               f"config {run.config_revision[:12]}")
    if run.passed != run.done or run.status != "finished":
        raise SystemExit(1)
