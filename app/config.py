"""Embedded defaults; every key can be overridden with a SKILLDESK_<KEY> environment variable."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from flask import Flask

DEFAULTS: dict[str, object] = {
    # Accounts and sessions
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_SECURE": False,  # both cookies are Secure over HTTPS anyway; True: always (app/web/cookies.py)
    "REMEMBER_COOKIE_HTTPONLY": True,
    "REMEMBER_COOKIE_SAMESITE": "Lax",
    "WTF_CSRF_TIME_LIMIT": None,
    "PROXY_FIX_HOPS": 0,
    "MAX_CONTENT_LENGTH": 16 * 1024 * 1024,
    # Serving: one process's capacity. A live stream holds a request thread (never a database
    # connection while it waits), so the threads bound the streams; see pool_options().
    "SERVER_THREADS": 256,
    "MAX_STREAMS": None,  # default: SERVER_THREADS - STREAM_RESERVE, threads left for pages and sends
    "MAX_RUNS": None,  # default: MAX_STREAMS, turns running at once in this process
    "STREAM_RESERVE": 16,
    "MAX_RUNS_PER_USER": 3,  # a person's answers under way at once, counted across workers (app/chat/turns.py)
    "STREAM_HEARTBEAT_SECONDS": 5,  # a waiting stream writes `: keep-alive` this often, to notice a gone client
    "DATABASE_POOL_SIZE": 10,
    "DATABASE_MAX_CONNECTIONS": None,  # per process; default: one per thread that may use the pool
    # SQLite: how long a write waits for the one writer's turn before it is answered 503 (nothing written)
    "DATABASE_WRITE_TIMEOUT_SECONDS": 10,
    # Chat runtime
    "MAX_MESSAGE_CHARS": 20_000,
    "MAX_MODEL_REQUESTS_PER_TURN": 25,
    "SIDEBAR_PAGE_SIZE": 30,
    "TRANSCRIPT_PAGE_SIZE": 100,
    "ALLOW_PUBLIC_LINKS": False,
    # Outbound HTTP from tools
    "OUTBOUND_ALLOWED_HOSTS": "",
    "OUTBOUND_TIMEOUT_SECONDS": 15,
    "OUTBOUND_MAX_BYTES": 2_000_000,
    # How run events and Stop reach other processes: auto, postgresql, redis or process
    "LIVE_EVENTS": "auto",
    # Background jobs
    "JOBS_IMMEDIATE": False,
    "JOBS_WORKERS": 2,
    # After Ctrl+C a consumer waits this long for its jobs to finish, then exits (indexing stops sooner)
    "JOBS_SHUTDOWN_SECONDS": 10,
    # Knowledge and embeddings
    "EMBEDDINGS": "minilm",
    "EMBEDDINGS_URL": None,
    "EMBEDDINGS_MODEL": None,
    "EMBEDDINGS_API_KEY_ENV": None,
    "KNOWLEDGE_FOLDERS": "",  # folders (os.pathsep between them) knowledge bases may sync from, besides docs/
    # Webhooks
    "WEBHOOK_MAX_BYTES": 64 * 1024,
    # Other tools: the OpenAI-compatible API (/v1/) and MCP (/mcp/<agent>), on personal tokens
    "TOKEN_RATE_LIMIT": 60,  # requests per minute of one token (a token's own limit replaces it)
    "USER_RATE_LIMIT": 120,  # requests per minute of one user, over all their tokens
    "RATE_LIMIT_STORAGE_URI": None,  # default: REDIS_URL, else the process's memory
    "OPENAI_MAX_BODY_BYTES": 1024 * 1024,
    "OPENAI_TURN_SECONDS": 600,  # a request that is not streamed waits this long for the answer
    "MCP_MAX_BODY_BYTES": 256 * 1024,
    "MCP_ALLOWED_ORIGINS": "",  # browser origins (comma-separated) that may call /mcp/; others are 403
    "MCP_SESSION_IDLE_SECONDS": 24 * 3600,
    # Runs that wait for people (app/waiting/): how long a call waits for a decision unless its trigger says
    # otherwise (24 h), and what applies then to the calls of chats (a trigger has its own choice).
    "DECISION_TIMEOUT_MINUTES": 24 * 60,
    "DECISION_TIMEOUT_CHOICE": "deny",
    "INBOX_POLL_SECONDS": 15,  # how often the navigation's count of waiting decisions is refreshed
    "PUBLIC_URL": None,  # this instance's address, for the links in notifications (https://skilldesk.example.org)
    # E-mail notifications: off until SMTP_HOST is set. SMTP_SECURITY is starttls, ssl or none.
    "SMTP_HOST": None,
    "SMTP_PORT": 587,
    "SMTP_SECURITY": "starttls",
    "SMTP_USERNAME": None,
    "SMTP_PASSWORD": None,
    "SMTP_FROM": None,
    "SMTP_TIMEOUT_SECONDS": 10,
    # Whether e-mails about waiting calls carry the tools' arguments (a trigger can allow it for its own).
    "NOTIFY_ARGUMENTS": False,
}

# The runtime loop's own thread and the executor threads it hands blocking work to.
RUNTIME_THREADS = 8

# Conventional 12-factor names, honoured next to their SKILLDESK_ spelling.
CONVENTIONAL = ("DATABASE_URL", "REDIS_URL", "CHROMA_URL")


def load(app: Flask, overrides: dict | None) -> None:
    """Fill app.config: defaults, then SKILLDESK_* variables, then the overrides of a test."""
    app.config.from_mapping(DEFAULTS)
    app.config.from_mapping({name: os.environ.get(name) for name in CONVENTIONAL})
    app.config.from_prefixed_env("SKILLDESK")
    if overrides:
        app.config.from_mapping(overrides)

    instance = Path(app.instance_path)
    instance.mkdir(parents=True, exist_ok=True)
    if not app.config.get("SECRET_KEY"):  # Flask's own default is None
        app.config["SECRET_KEY"] = _persistent_secret(instance / "secret_key")
    app.config.setdefault("SQLALCHEMY_DATABASE_URI", database_uri(app.config["DATABASE_URL"], instance))
    app.config.setdefault("JOBS_SQLITE_PATH", str(instance / "jobs.sqlite3"))
    app.config.setdefault("CHROMA_PATH", str(instance / "chroma"))
    threads = int(app.config["SERVER_THREADS"])
    if app.config["MAX_STREAMS"] is None:
        app.config["MAX_STREAMS"] = max(1, threads - int(app.config["STREAM_RESERVE"]))
    if app.config["MAX_RUNS"] is None:
        app.config["MAX_RUNS"] = app.config["MAX_STREAMS"]
    app.config.setdefault("SQLALCHEMY_ENGINE_OPTIONS", pool_options(app.config))
    for name, low in BOUNDED:
        app.config[name] = _at_least(app.config, name, low)
    for name, words in CHOSEN:
        if app.config[name] not in words:
            raise ValueError(f"SKILLDESK_{name} is one of {', '.join(words)} (it is {app.config[name]!r}).")


# Settings read as numbers, checked here so that a bad value stops the start with its name, not a request later.
BOUNDED = (("MAX_RUNS_PER_USER", 1), ("STREAM_HEARTBEAT_SECONDS", 1), ("TOKEN_RATE_LIMIT", 1),
           ("USER_RATE_LIMIT", 1), ("OPENAI_MAX_BODY_BYTES", 1024), ("OPENAI_TURN_SECONDS", 1),
           ("MCP_MAX_BODY_BYTES", 1024), ("MCP_SESSION_IDLE_SECONDS", 60), ("DECISION_TIMEOUT_MINUTES", 1),
           ("INBOX_POLL_SECONDS", 1), ("SMTP_PORT", 1), ("SMTP_TIMEOUT_SECONDS", 1))
# Settings read as one of a few words.
CHOSEN = (("DECISION_TIMEOUT_CHOICE", ("deny", "fail", "continue")), ("SMTP_SECURITY", ("starttls", "ssl", "none")))


def _at_least(config, name: str, low: int) -> int:
    value = config[name]
    try:
        number = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or number < low:
        raise ValueError(f"SKILLDESK_{name} must be a whole number of at least {low} (it is {value!r}).")
    return number


def pool_options(config) -> dict:
    """Size the connection pool from the threads that can use it at once, in this one place.

    Request threads, the job consumer's workers, the runtime loop and the few helper threads it hands
    blocking work to may each hold one connection, briefly; nothing holds one while it waits. The pool
    keeps DATABASE_POOL_SIZE connections open and opens more up to that bound under load, so no thread
    ever waits for a connection another one is merely keeping.
    """
    uri = config["SQLALCHEMY_DATABASE_URI"]
    if uri in ("sqlite://", "sqlite:///:memory:"):
        return {}  # one in-memory database per connection: SQLAlchemy's own pool for it
    users = int(config["SERVER_THREADS"]) + int(config["JOBS_WORKERS"]) + RUNTIME_THREADS
    # Several workers share the database server's max_connections: a cap makes threads wait their turn
    # for a connection (each holds one briefly) instead of the server refusing new ones.
    cap = config.get("DATABASE_MAX_CONNECTIONS")
    bound = min(users, max(1, int(cap))) if cap else users
    if uri.startswith("sqlite"):
        # Connections to a file cost no server: keep every one opened (an overflow connection would be
        # closed at checkin and opened again, pragmas and all, for the next burst), and hand out the most
        # recently used first, so the few that a quiet server needs stay warm and the rest stay idle.
        return {"pool_size": bound, "max_overflow": 0, "pool_use_lifo": True}
    size = min(int(config["DATABASE_POOL_SIZE"]), bound)
    # pool_pre_ping guards against dropped server connections.
    return {"pool_size": size, "max_overflow": bound - size, "pool_pre_ping": True}


def database_uri(url: str | None, instance: Path) -> str:
    """Return the SQLAlchemy URL: DATABASE_URL with the psycopg 3 driver, else SQLite in instance/."""
    if not url:
        return f"sqlite:///{instance / 'skilldesk.sqlite3'}"
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def _persistent_secret(path: Path) -> str:
    """Generate the secret key once and keep it in instance/, readable by its owner only."""
    if path.exists():
        return path.read_text().strip()
    key = secrets.token_urlsafe(48)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(key)
    return key
