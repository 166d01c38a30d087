"""A webhook-triggered run waits across a server restart (`flask serve`, Ctrl+C, start again) and is decided
through the API: the decision resumes it in the new process, and the run ends succeeded."""

from __future__ import annotations

import httpx
import pytest

from app.api.tokens import create_token
from app.extensions import db
from app.models import Message, PendingCall, Run, Trigger
from app.models.tables import new_hook_token
from tests.conftest import make_agent, make_user
from tests.server_process import answering, app_on, ctrl_c, free_port, instance, start, stop, wait_for

pytestmark = [pytest.mark.once, pytest.mark.filterwarnings("ignore::ResourceWarning")]


def run_row(app, run_id: str) -> tuple[str, str | None] | None:
    with app.app_context():
        row = db.session.execute(db.select(Run.status, Run.waiting_for).where(Run.id == run_id)).first()
        db.engine.dispose()
        return tuple(row) if row else None


def serve(env, tmp_path, name: str):
    port, log = free_port(), tmp_path / f"{name}.log"
    server = start(f".venv/bin/flask --app wsgi serve --port {port}", env, log)
    base = f"http://127.0.0.1:{port}"
    wait_for(answering(f"{base}/login"), f"the {name} server's first answer", process=server, log=log)
    return server, base, log


def test_a_webhook_run_waits_across_a_restart_and_is_decided_through_the_api(tmp_path):
    env = instance(tmp_path)
    app = app_on(env)
    with app.app_context():
        owner = make_user("admin", email="olga@example.org")
        runner = make_user("user", email="rita@example.org")
        # The offline model calls the clock for this prompt; tool approval on every tool makes it wait.
        agent = make_agent("Timekeeper", skills=[{"name": "clock", "config": {}},
                                                 {"name": "tool_approval", "config": {"tools": ["*"]}}])
        trigger = Trigger(name="Clock hook", kind="webhook", agent_id=agent.id, run_as_id=runner.id,
                          owner_id=owner.id, prompt="What time is it now?", token=new_hook_token())
        db.session.add(trigger)
        _token, secret = create_token(owner, "Pager", "chat", 30)
        db.session.commit()
        hook, runner_id = f"/hooks/{trigger.token}", runner.id
        db.engine.dispose()
    headers = {"Authorization": f"Bearer {secret}"}

    server, base, log = serve(env, tmp_path, "first")
    try:
        fired = httpx.post(f"{base}{hook}", json={}, timeout=30)
        assert fired.status_code == 202, fired.text
        run_id = fired.json()["run"]
        wait_for(lambda: run_row(app, run_id) == ("waiting", "approval"), "the run to wait", process=server, log=log)
        assert ctrl_c(server) == 0, log.read_text()
    finally:
        stop(server)
    assert run_row(app, run_id) == ("waiting", "approval")  # a stop leaves it waiting, not interrupted

    server, base, log = serve(env, tmp_path, "second")
    try:
        listed = httpx.get(f"{base}/api/approvals", headers=headers, timeout=30)
        assert listed.status_code == 200, listed.text
        [call] = listed.json()["data"]
        assert (call["tool"], call["kind"], call["runId"], call["trigger"]) == ("current_time", "approval", run_id,
                                                                                "Clock hook")
        decided = httpx.post(f"{base}/api/approvals/{call['id']}", json={"decision": "allow"}, headers=headers,
                             timeout=30)
        assert decided.status_code == 200, decided.text
        resumed_id = decided.json()["data"]["runId"]
        wait_for(lambda: run_row(app, resumed_id) == ("succeeded", None), "the resumed run", process=server, log=log)
        again = httpx.post(f"{base}/api/approvals/{call['id']}", json={"decision": "deny"}, headers=headers, timeout=30)
        assert again.status_code == 409 and again.json()["code"] == "ALREADY_DECIDED"
    finally:
        stop(server)
    assert run_row(app, run_id) == ("succeeded", None)
    with app.app_context():
        resumed = db.session.get(Run, resumed_id)
        answer = db.session.scalar(db.select(Message).where(Message.run_id == resumed_id))
        assert resumed.user_id == runner_id and resumed.origin_run_id == run_id
        assert [step["name"] for step in answer.steps] == ["current_time"] and not answer.steps[0]["failed"]
        assert db.session.get(PendingCall, call["id"]).status == "answered"
        db.engine.dispose()
