"""The README's scale-out commands, run as written: gunicorn workers with no consumer, and a consumer beside them.

The web server answers the chat; only the separate consumer can give the chat its title (a job).
"""

from __future__ import annotations

import os
import re

import httpx
import pytest

from app.extensions import db
from app.models import Agent, Conversation, Run
from tests.conftest import PASSWORD, make_user
from tests.server_process import ROOT, answering, app_on, ctrl_c, free_port, instance, start, stop, wait_for

REDIS_URL = os.environ.get("SKILLDESK_TEST_REDIS_URL")
README = (ROOT / "README.md").read_text()

WEB = ".venv/bin/flask --app wsgi serve --workers 4 --no-jobs"
CONSUMERS = [".venv/bin/flask --app wsgi jobs worker", ".venv/bin/huey_consumer wsgi.huey -k thread -w 2"]

pytestmark = [
    pytest.mark.once,  # its servers run on a SQLite instance of their own, whatever the pass
    pytest.mark.skipif(not REDIS_URL, reason="SKILLDESK_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/14)"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


@pytest.mark.parametrize("consumer_command", CONSUMERS)
def test_web_workers_and_a_separate_consumer_as_the_readme_says(tmp_path, consumer_command):
    assert WEB in README and consumer_command in README, "the README's scale-out commands changed: update this test"
    env = instance(tmp_path, REDIS_URL=REDIS_URL)
    app = app_on(env)
    with app.app_context():
        email = make_user().email
        agent_id = db.session.scalar(db.select(Agent.id).order_by(Agent.id))
        db.engine.dispose()
    port = free_port()
    web_log, consumer_log = tmp_path / "web.log", tmp_path / "consumer.log"
    web = start(f"{WEB} --port {port}", env, web_log)
    consumer = start(consumer_command, env, consumer_log)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(answering(f"{base}/login"), "the web server's first answer", process=web, log=web_log)
        wait_for(lambda: "consumer started" in consumer_log.read_text(), "the consumer's start",
                 process=consumer, log=consumer_log)
        with httpx.Client(base_url=base) as browser:
            assert browser.post("/login", data={"email": email, "password": PASSWORD}).status_code == 302
            chat = browser.post("/chat/", data={"agent_id": agent_id})
            conversation_id = int(re.search(r"/chat/(\d+)", chat.headers["location"]).group(1))
            assert browser.post(f"/chat/{conversation_id}/messages",
                                data={"text": "What time is it in Tokyo?"}).status_code == 302

        def titled():
            with app.app_context():
                try:
                    status = db.session.scalar(db.select(Run.status).where(Run.conversation_id == conversation_id))
                    return status == "succeeded" and db.session.get(Conversation, conversation_id).title
                finally:
                    db.session.remove()

        title = wait_for(titled, "the title job", process=consumer, log=consumer_log)
        assert title and "runs the job consumer" not in web_log.read_text()  # the web workers consumed nothing
        assert "generate_title" in consumer_log.read_text()
        assert ctrl_c(consumer) == 0, consumer_log.read_text()
        assert ctrl_c(web) == 0, web_log.read_text()
    finally:
        stop(consumer)
        stop(web)
        with app.app_context():
            db.engine.dispose()
