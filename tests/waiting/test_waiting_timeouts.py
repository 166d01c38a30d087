"""Timeouts: a call nobody decides in time gets its trigger's choice; time is moved forward, never slept."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.extensions import db
from app.models import ApprovalRecord, Message, PendingCall, Run
from app.runtime import execution
from app.waiting import timeouts
from tests.chat_driver import send, start_chat
from tests.waiting.scenario import approval_agent, fire, stored_run, waiting_call, webhook_trigger
from tests.waiting.test_waiting_inbox import token_for


def check_due(app, now=None) -> dict[str, int]:
    """Run the scheduler's minute check once, as its periodic job does, at the time given."""
    with app.app_context():
        return timeouts.check_due(now)


def runs_of(app, conversation_id: int) -> list[Run]:
    with app.app_context():
        runs = list(db.session.scalars(db.select(Run).where(Run.conversation_id == conversation_id)
                                       .order_by(Run.created_at)))
        db.session.expunge_all()
        return runs


def answers_of(app, conversation_id: int) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(db.select(Message.content).where(
            Message.conversation_id == conversation_id, Message.role == "assistant").order_by(Message.id)))


@pytest.mark.parametrize("choice", ["deny", "fail", "continue"])
def test_no_decision_in_time_applies_the_triggers_choice_and_is_recorded_expired(
        app, client, auth, scripted_model, choice):
    deleted: list[int] = []
    owner_id = auth.login_as("admin")
    agent_id = approval_agent(app, scripted_model, deleted)
    _trigger_id, path = webhook_trigger(app, agent_id, owner_id=owner_id, name="Nightly cleanup",
                                        decision_timeout_minutes=30, on_timeout=choice)
    run = fire(app, client, path, record=5)
    call = waiting_call(app, run.id)
    assert call.expires_at == call.created_at + timedelta(minutes=30)

    # A minute before the deadline nothing happens; a second after it, the choice applies.
    assert check_due(app, now=call.expires_at - timedelta(minutes=1))["expired"] == 0
    assert waiting_call(app, run.id).status == "pending" and stored_run(app, run.id).status == "waiting"
    assert check_due(app, now=call.expires_at + timedelta(seconds=1))["expired"] == 1
    expired = waiting_call(app, run.id)
    if expired.resume_run_id:
        execution.wait(expired.resume_run_id)
    assert expired.status == "expired" and deleted == []
    with app.app_context():
        record = db.session.scalar(db.select(ApprovalRecord))
        assert (record.status, record.decided_by) == ("expired", None)
        assert record.reason == ("No decision came within 30 min; the trigger Nightly cleanup's choice applied: "
                                 f"{choice}.")

    runs = runs_of(app, run.conversation_id)
    if choice == "fail":
        assert [r.status for r in runs] == ["failed"]  # no run resumed
        assert runs[0].error == "No decision came within 30 min, and the trigger Nightly cleanup's choice is to " \
                                "fail the run."
        with app.app_context():
            meta = db.session.scalar(db.select(Message.meta).where(Message.run_id == run.id,
                                                                   Message.role == "assistant"))
            assert meta["status"] == "failed" and "No decision came within 30 min" in meta["error"]
    else:
        first, resumed = runs
        assert resumed.trigger == "resume" and (first.status, resumed.status) == ("expired", "succeeded")
        told = {"deny": "No decision came within 30 min: the call was denied.",
                "continue": "No decision came within 30 min, so this call was not run. Go on without this tool."}
        assert answers_of(app, run.conversation_id)[-1] == f"delete_record: {told[choice]}"

    # Visible on the run and on the card, and restart-safe: checking again changes nothing.
    page = client.get(f"/runs/?run={run.id}").text
    assert f'id="run-call-{call.id}" data-state="expired"' in page and "Expired: no decision in time" in page
    assert check_due(app, now=call.expires_at + timedelta(hours=5)) == {"expired": 0, "resumed": 0, "planned": 0,
                                                                   "sent": 0}
    assert len(runs_of(app, run.conversation_id)) == len(runs)

    # A decision after the deadline: 409 with the state as it is.
    late = client.post(f"/api/approvals/{call.id}", json={"decision": "allow"}, headers=token_for(app, owner_id))
    assert late.status_code == 409 and late.json["code"] == "EXPIRED"
    assert late.json["call"]["status"] == "expired" and late.json["call"]["decision"]["choice"] == choice
    assert deleted == []


def test_a_chats_call_waits_the_sites_24_hours_and_is_refused_past_them_before_the_scheduler_runs(
        app, client, auth, scripted_model):
    deleted: list[int] = []
    agent_id = approval_agent(app, scripted_model, deleted)
    user_id = auth.login_as("user")
    conversation_id = start_chat(app, client, agent_id)
    run_id = send(app, client, conversation_id, "delete 8")
    call = waiting_call(app, run_id)
    assert call.expires_at == call.created_at + timedelta(hours=24)  # DECISION_TIMEOUT_MINUTES

    with app.app_context():  # the deadline passed (moved back here, not waited for): the call is expired
        db.session.execute(db.update(PendingCall).values(expires_at=call.created_at - timedelta(seconds=1)))
        db.session.commit()
    refused = client.post(f"/approvals/{call.id}/decision", data={"decision": "once"}, headers={"HX-Request": "true"})
    assert refused.status_code == 409 and "expired" in refused.text
    api = client.post(f"/api/approvals/{call.id}", json={"decision": "allow"}, headers=token_for(app, user_id))
    assert api.status_code == 409 and api.json["code"] == "EXPIRED" and api.json["call"]["status"] == "expired"
    assert client.get("/approvals/count").text.strip() == "" and deleted == []

    assert check_due(app)["expired"] == 1  # the site's choice for chats: deny, and the run goes on with it
    execution.wait(waiting_call(app, run_id).resume_run_id)
    first, resumed = runs_of(app, conversation_id)
    assert (first.status, resumed.status) == ("expired", "succeeded") and deleted == []
    assert "No decision came within 24 h: the call was denied." in answers_of(app, conversation_id)[-1]
    assert "Expired: no decision in time, so denied" in client.get(f"/chat/{conversation_id}").text


def test_a_decision_whose_resumption_never_started_is_resumed_by_the_scheduler(app, client, auth, scripted_model):
    deleted: list[int] = []
    agent_id = approval_agent(app, scripted_model, deleted)
    run = fire(app, client, webhook_trigger(app, agent_id)[1], record=3)
    call = waiting_call(app, run.id)
    with app.app_context():  # decided, then the process stopped before it resumed the run
        from app.runtime.deferred import record_answer
        row = db.session.get(PendingCall, call.id)
        record_answer(row, {"approved": True, "scope": "once"}, None, scope="once")
        db.session.commit()
    assert check_due(app)["resumed"] == 1
    with app.app_context():
        resumed_id = db.session.get(PendingCall, call.id).resume_run_id
    execution.wait(resumed_id)
    assert deleted == [3] and stored_run(app, run.id).status == "succeeded"
    assert check_due(app)["resumed"] == 0
