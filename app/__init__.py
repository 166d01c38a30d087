"""Skilldesk: admins compose AI agents from configurable skills; people chat with them."""

from __future__ import annotations

from pathlib import Path

from flask import Flask


def create_app(config: dict | None = None, *, views: bool = True) -> Flask:
    """Build the app: defaults, SKILLDESK_* variables, test overrides, extensions, areas, blueprints, skills.

    `views=False` leaves the blueprints out, for a process that serves no page (nothing the areas need
    depends on a blueprint having been imported).
    """
    app = Flask(__name__, instance_relative_config=True)

    # The factory imports the app's parts here, not at the top, so that importing one module of the
    # package (`app.models` in a migration, a task in the job consumer) does not load all of them.
    from app import config as settings

    settings.load(app, config)

    from app import accounts, database
    from app.extensions import csrf, db, jobs, login_manager, migrate
    from app.web import cookies, errors, navigation, rendering, security, text_input
    from app.web import request as web_request

    web_request.init_app(app)  # before any route: the bounded `int` converter

    db.init_app(app)
    database.init_app(app)
    migrate.init_app(app, db, directory=str(Path(app.root_path).parent / "migrations"))
    login_manager.init_app(app)
    accounts.init_app(app)  # who is signed in, before anything asks
    csrf.init_app(app)
    security.init_app(app)
    cookies.init_app(app)
    text_input.init_app(app)  # after the sign-in check: anonymous visitors are sent to sign in first
    errors.init_app(app)
    navigation.init_app(app)
    rendering.init_app(app)

    # Each area wires itself: purge steps, table-event listeners, navigation, template globals, skill services.
    from app import assistance, chat, knowledge, triggers, waiting, workspace

    assistance.init_app(app)
    chat.init_app(app)
    knowledge.init_app(app)
    triggers.init_app(app)
    waiting.init_app(app)
    workspace.init_app(app)

    if views:
        from app.blueprints import register_blueprints

        register_blueprints(app)

    from app import cli, evals, skills
    from app.runtime import execution

    execution.init_app(app)
    skills.init_app(app)
    # Last: tasks declared by blueprints and skills (@jobs.task) must be imported before huey binds them.
    jobs.init_app(app)
    cli.init_app(app)
    evals.init_app(app, create_app)
    return app
