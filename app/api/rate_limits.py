"""Rate limits of the other tools' endpoints (/v1/, /mcp/): per token and per user, with Flask-Limiter.

Every request signed in by a token counts against two moving one-minute windows shared by all those
endpoints: the token's own (its `rate_limit`, else TOKEN_RATE_LIMIT per minute) and its user's, over
all their tokens (USER_RATE_LIMIT per minute). The counts live on Redis when REDIS_URL is set, so
they hold across workers and machines, and in the process's memory otherwise (one worker: `make run`).
Past a limit the answer is 429 with Retry-After, in the endpoint's own error shape.
"""

from __future__ import annotations

import math
import time

from flask import Blueprint, Flask, current_app, g
from flask_limiter import Limiter
from flask_login import current_user

SCOPE = "agent-tools"


def init_app(app: Flask, blueprints: tuple[Blueprint, ...]) -> Limiter:
    """Limit the blueprints' requests per token and per user (each answers `RateLimitExceeded` in its shape,
    with `retry_after()` seconds)."""
    storage = app.config.get("RATE_LIMIT_STORAGE_URI") or app.config.get("REDIS_URL") or "memory://"
    limiter = Limiter(key_func=_token_key, storage_uri=storage, strategy="moving-window",
                      key_prefix="skilldesk-rate", headers_enabled=False)
    for bp in blueprints:
        limiter.shared_limit(_token_limit, scope=f"{SCOPE}-token", key_func=_token_key)(bp)
        limiter.shared_limit(_user_limit, scope=f"{SCOPE}-user", key_func=_user_key)(bp)
    limiter.init_app(app)
    app.extensions["rate_limiter"] = limiter
    return limiter


def retry_after() -> int:
    """Return the seconds until the limit this request broke lets a request through again."""
    limiter: Limiter = current_app.extensions["rate_limiter"]
    breached = limiter.current_limit
    if breached is None:
        return 60
    return max(1, math.ceil(breached.reset_at - time.time()))


def _token_key() -> str:
    token = g.get("api_token")
    return f"token:{token.id}" if token is not None else ""  # an empty key skips the limit (not signed in)


def _user_key() -> str:
    return f"user:{current_user.id}" if current_user.is_authenticated else ""


def _token_limit() -> str:
    token = g.get("api_token")
    site = int(current_app.config["TOKEN_RATE_LIMIT"])
    # A token's own limit may only be lower than the site's: its user cannot lift what the admin set.
    chosen = token.rate_limit if token is not None else None
    return f"{min(int(chosen), site) if chosen else site} per minute"


def _user_limit() -> str:
    return f"{int(current_app.config['USER_RATE_LIMIT'])} per minute"
