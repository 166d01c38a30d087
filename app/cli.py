"""Command-line tools: create users, serve (gunicorn, `app/server.py`), run job consumers, recover runs."""

from __future__ import annotations

import logging

import click
from flask import Flask, current_app
from flask.cli import AppGroup, with_appcontext

from app import server
from app.accounts.forms import PASSWORD_MIN
from app.accounts.users import create_user
from app.extensions import db
from app.models import ROLES, User
from app.runtime.interruption import interrupt_here, recover_interrupted
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
    """Mark runs no server runs any more as interrupted (run once before starting workers)."""
    click.echo(f"Marked {recover_interrupted()} unfinished run(s) as interrupted.")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True)
@click.option("--workers", default=None, type=click.IntRange(min=1),
              help="Web worker processes, each with SERVER_THREADS threads [default: one per core].")
@click.option("--jobs/--no-jobs", default=True, show_default=True,
              help="Run the background-job consumer in the knowledge process (--no-jobs when `flask jobs worker` "
                   "runs them).")
@with_appcontext
def serve_command(host: str, port: int, workers: int | None, jobs: bool) -> None:
    """Serve Skilldesk with gunicorn's threaded workers; Ctrl+C interrupts the runs in flight and stops."""
    app = current_app._get_current_object()
    _log_to_stderr()
    count = recover_interrupted()
    if count:
        click.echo(f"Marked {count} unfinished run(s) as interrupted.")
    workers = workers or server.default_workers()
    click.echo(f"Skilldesk is serving on http://{host}:{port}/ with {workers} worker(s) of "
               f"{app.config['SERVER_THREADS']} threads and a knowledge process (Ctrl+C to stop)")
    server.serve(app, host, port, workers=workers, jobs=jobs)


jobs_group = AppGroup("jobs", help="Background jobs.")


@jobs_group.command("worker")
@click.option("--workers", default=None, type=int, help="Consumer threads (default JOBS_WORKERS).")
@click.option("--periodic/--no-periodic", default=True, show_default=True,
              help="Also enqueue the periodic tasks (schedules); keep it on in exactly one consumer.")
@with_appcontext
def jobs_worker_command(workers: int | None, periodic: bool) -> None:
    """Run a job consumer in this process until Ctrl+C or SIGTERM (for REDIS_URL scale-out)."""
    app = current_app._get_current_object()
    _log_to_stderr()
    if app.config["JOBS_IMMEDIATE"]:
        raise click.UsageError("JOBS_IMMEDIATE is on: jobs run inline, there is nothing to consume")
    queue = app.extensions["jobs"]
    queue.huey.exit_hooks = [lambda: interrupt_here(app)]  # should it leave jobs running past its timeout
    consumer = queue.huey.create_consumer(workers=workers or int(app.config["JOBS_WORKERS"]),
                                          worker_type="thread", periodic=periodic)
    click.echo(f"Consuming jobs from {type(queue.huey).__name__} with {consumer.workers} thread(s)")
    try:
        consumer.run()  # huey handles SIGINT (graceful) and SIGTERM itself
    finally:
        interrupt_here(app)  # runs started by jobs (triggers) end interrupted, not left running


def _log_to_stderr() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def init_app(app: Flask) -> None:
    for command in (create_user_command, recover_runs_command, serve_command, jobs_group):
        app.cli.add_command(command)
