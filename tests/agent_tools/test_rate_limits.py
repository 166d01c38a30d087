"""Rate limits of /v1/ and /mcp/: per token and per user, counted on Redis (shared by every worker) when
REDIS_URL is set."""

from __future__ import annotations

import os

import pytest
import redis
from limits.storage import MemoryStorage, RedisStorage

from app import create_app
from app.extensions import db
from tests.agent_tools.conftest import bearer, token_for

REDIS = os.environ.get("SKILLDESK_TEST_REDIS_URL")


def test_the_user_limit_covers_all_their_tokens_and_both_endpoints(app, client, auth):
    app.config["USER_RATE_LIMIT"] = 3
    user_id = auth.create("user")
    first, second = token_for(app, user_id), token_for(app, user_id)
    assert isinstance(app.extensions["rate_limiter"].storage, MemoryStorage)  # no REDIS_URL in tests
    answers = [client.get("/v1/models", headers=bearer(first)), client.get("/v1/models", headers=bearer(second)),
               client.delete("/mcp/demo-assistant", headers=bearer(first)),
               client.get("/v1/models", headers=bearer(second))]
    assert [a.status_code for a in answers] == [200, 200, 400, 429]  # DELETE without a session counts too
    assert "error" in answers[-1].json and int(answers[-1].headers["Retry-After"]) >= 1
    other = token_for(app, auth.create("user"))
    assert client.get("/v1/models", headers=bearer(other)).status_code == 200  # another user counts apart


@pytest.mark.skipif(not REDIS, reason="set SKILLDESK_TEST_REDIS_URL to count rate limits on Redis")
def test_on_redis_two_workers_share_one_count(app, settings, auth):
    redis.Redis.from_url(REDIS).flushdb()
    worker_settings = {**settings, "REDIS_URL": REDIS, "LIVE_EVENTS": "process"}
    workers = [create_app(worker_settings), create_app(worker_settings)]
    try:
        assert all(isinstance(w.extensions["rate_limiter"].storage, RedisStorage) for w in workers)
        secret = token_for(app, auth.create("user"), rate_limit=2)
        answers = [workers[n % 2].test_client().get("/v1/models", headers=bearer(secret)) for n in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]  # the third, in the first worker, sees two
    finally:
        for worker in workers:
            with worker.app_context():
                db.engine.dispose()


def test_a_token_can_narrow_the_sites_limit_but_never_lift_it(app, client, auth):
    app.config["TOKEN_RATE_LIMIT"] = 2
    app.config["USER_RATE_LIMIT"] = 100
    user_id = auth.create("user")
    lifted, narrowed = token_for(app, user_id, rate_limit=10_000), token_for(app, user_id, rate_limit=1)
    assert [client.get("/v1/models", headers=bearer(lifted)).status_code for _ in range(3)] == [200, 200, 429]
    assert [client.get("/v1/models", headers=bearer(narrowed)).status_code for _ in range(2)] == [200, 429]
