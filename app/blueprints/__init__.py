"""One blueprint per area, registered with its navigation entries (in the top bar's order)."""

from __future__ import annotations

from flask import Flask

from app.web import navigation


def register_blueprints(app: Flask) -> None:
    # Imported here, like the rest of the factory's parts: loading `app.blueprints` alone loads no view.
    from app.blueprints import account, admin, agents, auth, chat, home, models, runs, shares

    app.register_blueprint(home.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(account.bp, url_prefix="/account")
    app.register_blueprint(admin.bp, url_prefix="/admin")
    app.register_blueprint(models.bp, url_prefix="/admin/models")
    app.register_blueprint(agents.bp, url_prefix="/admin/agents")
    app.register_blueprint(chat.bp, url_prefix="/chat")
    app.register_blueprint(runs.bp, url_prefix="/runs")
    app.register_blueprint(shares.bp)

    from app.blueprints import assistant_panel

    app.register_blueprint(assistant_panel.bp, url_prefix="/assistant")

    from app.blueprints import credentials, model_picker

    app.register_blueprint(credentials.bp, url_prefix="/credentials")
    navigation.add(app, "Credentials", "credentials.index", ("admin", "user"))
    app.register_blueprint(model_picker.bp, url_prefix="/chat")

    from app.blueprints import memories

    app.register_blueprint(memories.bp, url_prefix="/memories")
    navigation.add(app, "Memories", "memories.index", ("admin", "user"))

    from app.blueprints import approvals

    app.register_blueprint(approvals.bp, url_prefix="/approvals")
    navigation.add(app, "Approvals", "approvals.index", ("admin", "user"), badge="approvals.count")

    from app.blueprints import data, hooks, tables_admin, triggers_admin

    app.register_blueprint(data.bp, url_prefix="/data")
    app.register_blueprint(hooks.bp, url_prefix="/hooks")
    app.register_blueprint(tables_admin.bp, url_prefix="/admin/tables")
    app.register_blueprint(triggers_admin.bp, url_prefix="/admin/triggers")
    navigation.add(app, "Data", "data.tables")
    navigation.add(app, "Tables", "tables_admin.index", ("admin",))
    navigation.add(app, "Triggers", "triggers_admin.index", ("admin",))
    navigation.add(app, "Runs", "runs.index", ("admin",))

    from app import api as api_plumbing
    from app.blueprints import api, api_approvals, api_chat, assistant_admin, tokens

    api_plumbing.init_app(app, api.bp)
    api_plumbing.init_app(app, api_chat.bp)
    api_plumbing.init_app(app, api_approvals.bp)
    app.register_blueprint(api.bp, url_prefix="/api")
    app.register_blueprint(api_chat.bp, url_prefix="/api")
    app.register_blueprint(api_approvals.bp, url_prefix="/api")
    app.register_blueprint(assistant_admin.bp, url_prefix="/admin/assistant")
    navigation.add(app, "Assistant", "assistant_admin.show", ("admin",))
    app.register_blueprint(tokens.bp, url_prefix="/account/tokens")

    from app.blueprints import knowledge

    app.register_blueprint(knowledge.bp)

    from app.blueprints import evals

    app.register_blueprint(evals.bp, url_prefix="/admin/evals")

    # Other tools: the OpenAI-compatible API and an MCP server per agent, on tokens only, rate limited.
    from app.api import rate_limits
    from app.blueprints import mcp, openai_api, token_admin
    from app.web.errors import add_error_shape

    api_plumbing.init_token_area(app, openai_api.bp, "openai", openai_api.refusal)
    add_error_shape(app, "/v1/", openai_api.shape_of)
    app.register_blueprint(openai_api.bp, url_prefix="/v1")
    api_plumbing.init_token_area(app, mcp.bp, "mcp", mcp.refusal, guard=mcp.origin_guard)
    add_error_shape(app, "/mcp/", mcp.shape_of)
    app.register_blueprint(mcp.bp, url_prefix="/mcp")
    rate_limits.init_app(app, (openai_api.bp, mcp.bp))
    app.register_blueprint(token_admin.bp, url_prefix="/admin/tokens")
    navigation.add(app, "Tokens", "token_admin.index", ("admin",))
