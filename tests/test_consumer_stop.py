"""Ctrl+C on a job consumer while it indexes the docs (the embedding model loading): it exits at once and cleanly.

Whether the indexing job stops at its next batch within the shutdown time or is left behind past it, the
consumer exits 0: leaving a job that still runs in native code (the model loading) never aborts the process.
"""

from __future__ import annotations

import pytest

from tests.server_process import ctrl_c, instance, start, stop, wait_for

pytestmark = [pytest.mark.once, pytest.mark.filterwarnings("ignore::ResourceWarning")]


@pytest.mark.parametrize("consumer_command", [".venv/bin/flask --app wsgi jobs worker",
                                              ".venv/bin/huey_consumer wsgi.huey -k thread -w 2"])
def test_ctrl_c_while_the_docs_are_indexed_exits_cleanly(tmp_path, consumer_command):
    env = instance(tmp_path, SKILLDESK_JOBS_SHUTDOWN_SECONDS="0.5")  # the SQLite queue, the default
    log = tmp_path / "consumer.log"
    consumer = start(consumer_command, env, log)
    try:
        wait_for(lambda: "Executing app.knowledge.indexing.index_knowledge_base" in log.read_text(),
                 "the docs' indexing job", process=consumer, log=log)
        assert ctrl_c(consumer) == 0, log.read_text()
        assert "terminate called" not in log.read_text()
    finally:
        stop(consumer)
