"""Evaluations: datasets of cases run against an agent on disposable databases, recorded and compared."""

from collections.abc import Callable

from flask import Flask

from app.evals import library, reports
from app.evals.commands import eval_group


def init_app(app: Flask, factory: Callable[..., Flask]) -> None:
    """Add the `flask eval` commands; keep the app factory that builds each case's disposable app."""
    app.extensions["evals.factory"] = factory
    app.cli.add_command(eval_group)
    app.add_template_global(library.names, "eval_datasets")
    app.add_template_global(reports.last_run, "last_eval_run")
