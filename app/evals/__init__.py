"""Evaluations: datasets of cases run against an agent on disposable databases, recorded and compared."""

from flask import Flask

from app.evals.commands import eval_group


def init_app(app: Flask) -> None:
    """Add the `flask eval` commands."""
    app.cli.add_command(eval_group)
