"""Command-line tools: create users for scripts, and serve with a job consumer beside the web server."""

from __future__ import annotations

import logging

import click
from flask import Flask, current_app
from flask.cli import with_appcontext
from werkzeug.serving import run_simple

from app.accounts.forms import PASSWORD_MIN
from app.accounts.users import create_user
from app.extensions import db
from app.models import ROLES, User
from app.runtime.execution import recover_interrupted
from app.seed import ensure_defaults


@click.command("create-user")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--role", type=click.Choice(ROLES), default="user", show_default=True)
@click.password_option(help="Prompted for when not given.")
@with_appcontext
def create_user_command(email: str, name: str, role: str, password: str) -> None:
    """Create a user account."""
    if len(password) < PASSWORD_MIN:
        raise click.BadParameter(f"use at least {PASSWORD_MIN} characters", param_hint="--password")
    if db.session.scalar(db.select(User.id).where(User.email == email.strip().lower())) is not None:
        raise click.BadParameter("an account with this e-mail already exists", param_hint="--email")
    user = create_user(email, name, password, role)
    ensure_defaults()
    db.session.commit()
    click.echo(f"Created {user.email} ({user.role}).")


@click.command("recover-runs")
@with_appcontext
def recover_runs_command() -> None:
    """Mark runs left running by a crash as failed (run once before starting workers)."""
    click.echo(f"Marked {recover_interrupted()} interrupted run(s) as failed.")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True)
@with_appcontext
def serve_command(host: str, port: int) -> None:
    """Serve Skilldesk with a background-job consumer in threads beside the web server."""
    app = current_app._get_current_object()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    count = recover_interrupted()
    if count:
        click.echo(f"Marked {count} interrupted run(s) as failed.")
    consumer = app.extensions["jobs"].consumer(workers=app.config["JOBS_WORKERS"])
    consumer.start()
    click.echo(f"Skilldesk is serving on http://{host}:{port}/ (Ctrl+C to stop)")
    try:
        run_simple(host, port, app, threaded=True, use_reloader=False, use_debugger=False)
    finally:
        consumer.stop(graceful=False)


def init_app(app: Flask) -> None:
    for command in (create_user_command, recover_runs_command, serve_command):
        app.cli.add_command(command)
