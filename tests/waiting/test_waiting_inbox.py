"""A run that waits for a person says so everywhere, and the people who may decide find it in their inbox."""

from __future__ import annotations

import json

from app.api.tokens import create_token
from app.extensions import db
from app.models import ApprovalRecord, Message, PendingCall, Run, User
from tests.chat_driver import resumed_run, send, start_chat
from tests.conftest import make_user
from tests.waiting.scenario import approval_agent, fire, stored_run, waiting_call, webhook_trigger

HX = {"HX-Request": "true"}


def client_of(app, auth_class, role: str = "user", **kwargs):
    """A browser of its own, signed in as a new person; returns (client, user id)."""
    other = app.test_client()
    user_id = auth_class(app, other).login_as(role, **kwargs)
    return other, user_id


def token_for(app, user_id: int, scope: str = "chat") -> dict[str, str]:
    with app.app_context():
        _token, secret = create_token(db.session.get(User, user_id), "Script", scope, 30)
        db.session.commit()
    return {"Authorization": f"Bearer {secret}"}


def test_a_webhook_run_waits_is_listed_waiting_and_is_decided_from_the_trigger_owners_inbox(
        app, client, auth, scripted_model):
    deleted: list[int] = []
    owner_id = auth.login_as("admin", name="Olga Owner")
    with app.app_context():
        runner = make_user("user", name="Rita Runner")
        runner_id, runner_email = runner.id, runner.email
    agent_id = approval_agent(app, scripted_model, deleted)
    _trigger_id, path = webhook_trigger(app, agent_id, run_as_id=runner_id, owner_id=owner_id, name="Cleanup hook")

    run = fire(app, client, path, record=7)
    assert deleted == [] and (run.status, run.waiting_for, run.finished_at) == ("waiting", "approval", None)
    call = waiting_call(app, run.id)

    # The admins' runs list says it waits, and filters on it.
    page = client.get("/runs/").text
    assert f'id="run-{run.id}" data-status="waiting"' in page and "waiting · approval" in page
    assert "took" not in page.split(f'id="run-{run.id}"')[1].split("</header>")[0]
    assert f'id="run-call-{call.id}" data-state="pending"' in page
    assert run.id in client.get("/runs/?status=waiting").text
    assert run.id in client.get("/runs/?waiting_for=approval").text
    assert run.id not in client.get("/runs/?status=succeeded").text
    assert run.id not in client.get("/runs/?waiting_for=question").text

    # The trigger's owner finds it in the inbox: agent, trigger, tool, arguments, since and until when.
    assert client.get("/approvals/count").text.strip().endswith(">1</span>")
    inbox = client.get("/approvals/")
    assert inbox.status_code == 200 and f'id="inbox-call-{call.id}"' in inbox.text
    assert "Clerk" in inbox.text and "trigger Cleanup hook" in inbox.text and "runs as Rita Runner" in inbox.text
    assert "<code>delete_record</code>" in inbox.text and "<dt>record_id</dt>" in inbox.text
    assert call.expires_at.strftime("%Y-%m-%d %H:%M") in inbox.text and "Always in this run" in inbox.text
    assert "Always in this chat" not in inbox.text  # a chat's own option, on its card

    # The user it runs as sees it too; someone else and a guest get 404 for it, here and in the API.
    runner_client = app.test_client()
    type(auth)(app, runner_client).login(runner_email)
    assert f'id="inbox-call-{call.id}"' in runner_client.get("/approvals/").text
    stranger, stranger_id = client_of(app, type(auth))
    guest, guest_id = client_of(app, type(auth), "guest")
    for other, other_id in ((stranger, stranger_id), (guest, guest_id)):
        assert other.get(f"/approvals/{call.id}").status_code == 404
        assert other.post(f"/approvals/{call.id}/decision", data={"decision": "once", "view": "inbox"},
                          headers=HX).status_code == 404
        api = other.post(f"/api/approvals/{call.id}", json={"decision": "allow"}, headers=token_for(app, other_id))
        assert api.status_code == 404 and api.json["code"] == "NOT_FOUND"
    assert f'id="inbox-call-{call.id}"' not in stranger.get("/approvals/").text
    assert guest.get("/approvals/").status_code == 403 and guest.get("/approvals/count").text.strip() == ""
    assert calls_pending(app) == 1 and deleted == []

    decided = client.post(f"/approvals/{call.id}/decision", data={"decision": "once", "view": "inbox"}, headers=HX)
    assert decided.status_code == 200 and decided.headers["HX-Trigger"] == "approvals-changed"
    assert f'id="inbox-call-{call.id}"' in decided.text and "Allowed once" in decided.text
    resumed = resumed_run(app, call.id)
    assert deleted == [7] and resumed.user_id == runner_id and resumed.origin_run_id == run.id
    assert (stored_run(app, run.id).status, resumed.status) == ("succeeded", "succeeded")
    with app.app_context():
        record = db.session.scalar(db.select(ApprovalRecord))
        owner_email = db.session.get(User, owner_id).email
        assert (record.status, record.scope, record.decided_by) == ("allowed", "once", owner_email)

    # Decided twice: 409 with the state as it is; the count is back to nothing.
    again = client.post(f"/approvals/{call.id}/decision", data={"decision": "deny", "view": "inbox"}, headers=HX)
    assert again.status_code == 409 and "answered already" in again.text and "Allowed once" in again.text
    assert client.get("/approvals/count").text.strip() == ""
    assert f'id="inbox-call-{call.id}"' in client.get("/approvals/").text.split("Decided lately")[1]
    runs = client.get(f"/runs/?run={run.id}").text
    assert 'data-status="succeeded"' in runs and "Allowed once by" in runs
    assert client.get("/approvals/audit").status_code == 200 and 'id="audit-link"' in client.get("/approvals/").text


def calls_pending(app) -> int:
    with app.app_context():
        return db.session.scalar(db.select(db.func.count(PendingCall.id)).where(PendingCall.status == "pending"))


def test_an_agents_approvers_decide_on_a_chat_through_the_api_and_a_denial_ends_the_run_denied(
        app, client, auth, scripted_model):
    deleted: list[int] = []
    with app.app_context():
        approver = make_user("user", name="Ada Approver")
        approver_id, approver_email = approver.id, approver.email
        bystander_id = make_user("user").id
    admin_client, admin_id = client_of(app, type(auth), "admin")
    # The agent editor names the approvers: every admin, and Ada by e-mail.
    agent_id = approval_agent(app, scripted_model, deleted)
    with app.app_context():
        from app.models import Agent
        agent = db.session.get(Agent, agent_id)
        form = {"name": agent.name, "instructions": agent.instructions, "roles": ["admin", "user"],
                "max_requests": "10", "model_config_id": str(agent.model_config_id),
                "approver_roles": ["admin"], "approver_emails": f"{approver_email}\n",
                "skills-0-name": "records", "skills-1-name": "tool_approval",
                "skills-1-settings-tools": "delete_*", "skills-1-settings-allow_always": "y", "action": "save"}
    refused = admin_client.post(f"/admin/agents/{agent_id}", data={**form, "approver_emails": "nobody@example.org"})
    assert refused.status_code == 422 and "No active account has the e-mail nobody@example.org" in refused.text
    saved = admin_client.post(f"/admin/agents/{agent_id}", data=form)
    assert saved.status_code == 302, saved.text
    with app.app_context():
        agent = db.session.get(Agent, agent_id)
        assert (agent.approver_roles, agent.approver_ids) == (["admin"], [approver_id])
    assert approver_email in admin_client.get(f"/admin/agents/{agent_id}").text

    owner_id = auth.login_as("user", name="Chris Chat")
    conversation_id = start_chat(app, client, agent_id)
    run_id = send(app, client, conversation_id, "delete 9")
    call = waiting_call(app, run_id)
    page = client.get(f"/chat/{conversation_id}").text
    assert 'data-testid="run-waiting"' in page and "Always in this run" in page and "Always in this chat" in page

    headers = token_for(app, approver_id)
    listed = client.get("/api/approvals", headers=headers)
    assert listed.status_code == 200
    [item] = listed.json["data"]
    assert (item["id"], item["kind"], item["tool"], item["arguments"], item["status"]) == (
        call.id, "approval", "delete_record", {"record_id": 9}, "pending")
    assert item["answer"]["href"] == f"/api/approvals/{call.id}" and item["conversationId"] == conversation_id
    assert admin_client.get("/approvals/count").text.strip().endswith(">1</span>")  # every admin may decide
    assert client.get("/api/approvals", headers=token_for(app, bystander_id)).json["data"] == []
    assert client.get("/api/approvals", headers=token_for(app, owner_id)).json["data"][0]["id"] == call.id

    # Bad input: 422, nothing decided.
    for body, field in (({"decision": "maybe"}, "decision"),
                        ({"decision": "deny", "comment": "x" * 2001}, "comment"),
                        ({"decision": "allow", "scope": "forever"}, "scope"),
                        ({"decision": "deny", "extra": 1}, "extra")):
        bad = client.post(f"/api/approvals/{call.id}", json=body, headers=headers)
        assert bad.status_code == 422 and field in json.dumps(bad.json["fields"]), bad.json
    control = client.post(f"/api/approvals/{call.id}", json={"decision": "deny", "comment": "no\x07"}, headers=headers)
    assert control.status_code == 422
    read_only = client.post(f"/api/approvals/{call.id}", json={"decision": "deny"},
                            headers=token_for(app, approver_id, "read"))
    assert read_only.status_code == 403 and read_only.json["code"] == "INSUFFICIENT_SCOPE"
    assert calls_pending(app) == 1

    denied = client.post(f"/api/approvals/{call.id}", json={"decision": "deny", "comment": "Record 9 is in use."},
                         headers=headers)
    assert denied.status_code == 200, denied.json
    data = denied.json["data"]
    assert data["call"]["status"] == "answered" and data["call"]["decision"]["outcome"] == "denied"
    assert (data["call"]["decision"]["by"], data["call"]["decision"]["comment"]) == (approver_email,
                                                                                    "Record 9 is in use.")
    resumed = resumed_run(app, call.id)
    assert data["runId"] == resumed.id and resumed.user_id == owner_id and deleted == []
    assert stored_run(app, run_id).status == "denied" and resumed.status == "succeeded"
    with app.app_context():
        answer = db.session.scalar(db.select(Message.content).where(Message.run_id == resumed.id))
        assert answer == "delete_record: The user denied this call: Record 9 is in use."

    twice = client.post(f"/api/approvals/{call.id}", json={"decision": "allow"}, headers=headers)
    assert twice.status_code == 409 and twice.json["code"] == "ALREADY_DECIDED"
    assert twice.json["call"]["decision"]["outcome"] == "denied"
    card = client.get(f"/chat/{conversation_id}").text
    assert "Denied" in card and "by Ada Approver" in card


def test_always_in_this_run_allows_the_tools_later_calls_of_that_run_only(app, client, auth, scripted_model):
    deleted: list[int] = []
    agent_id = approval_agent(app, scripted_model, deleted)
    auth.login_as("user")
    conversation_id = start_chat(app, client, agent_id)
    run_id = send(app, client, conversation_id, "delete 1 then 2")
    first = waiting_call(app, run_id)
    too_long = client.post(f"/approvals/{first.id}/decision", data={"decision": "deny", "comment": "x" * 2001},
                           headers=HX)
    assert too_long.status_code == 422 and "2,000 characters" in too_long.text and "x" * 2001 in too_long.text

    response = client.post(f"/approvals/{first.id}/decision", data={"decision": "run"}, headers=HX)
    assert response.status_code == 200 and "Allowed in this run" in response.text
    resumed = resumed_run(app, first.id)
    # The second call of the same tool in the same run went through without a card.
    assert deleted == [1, 2] and resumed.status == "succeeded"
    with app.app_context():
        records = db.session.scalars(db.select(ApprovalRecord).order_by(ApprovalRecord.id))
        scopes = [(r.status, r.scope) for r in records]
        assert scopes == [("allowed", "run"), ("allowed", "standing")]
        assert db.session.get(Run, run_id).status == "succeeded"

    later = send(app, client, conversation_id, "delete 3")  # a new turn is a new run: it asks again
    assert deleted == [1, 2] and stored_run(app, later).status == "waiting"


def test_exports_show_the_waiting_turn_the_decision_who_made_it_and_when(app, client, auth, scripted_model):
    agent_id = approval_agent(app, scripted_model, [])
    user_id = auth.login_as("user")
    conversation_id = start_chat(app, client, agent_id)
    run_id = send(app, client, conversation_id, "delete 4")
    call = waiting_call(app, run_id)
    waiting = client.get(f"/chat/{conversation_id}/export.md").text
    assert "_(waiting for approval)_" in waiting
    assert '**Waiting for approval:** tool `delete_record` `{"record_id": 4}`' in waiting
    assert "**Waiting** for a decision, until" in waiting

    client.post(f"/approvals/{call.id}/decision", data={"decision": "deny", "comment": "Keep it."})
    resumed_run(app, call.id)
    with app.app_context():
        email = db.session.get(User, user_id).email
        decided_at = db.session.get(PendingCall, call.id).answered_at
    markdown = client.get(f"/chat/{conversation_id}/export.md").text
    assert f"**Denied** by {email} at {decided_at:%Y-%m-%d %H:%M} UTC; comment: Keep it." in markdown
    assert "_(denied)_" in markdown  # the waiting turn ended denied
    exported = json.loads(client.get(f"/chat/{conversation_id}/export.json").text)
    [entry] = [m for m in exported["messages"] if "calls" in m]
    [summary] = entry["calls"]
    assert (summary["tool"], summary["arguments"], summary["status"]) == ("delete_record", {"record_id": 4},
                                                                          "answered")
    assert summary["decision"] == {"outcome": "denied", "by": email, "at": decided_at.isoformat(),
                                   "comment": "Keep it."}


def test_deleting_a_chat_that_waits_ends_its_run_and_empties_the_inbox(app, client, auth, scripted_model):
    agent_id = approval_agent(app, scripted_model, [])
    auth.login_as("user")
    conversation_id = start_chat(app, client, agent_id)
    run_id = send(app, client, conversation_id, "delete 6")
    assert client.get("/approvals/count").text.strip().endswith(">1</span>")
    assert client.post(f"/chat/{conversation_id}/delete").status_code == 302
    assert stored_run(app, run_id).status == "cancelled" and calls_pending(app) == 0
    assert client.get("/approvals/count").text.strip() == "" and 'id="inbox-empty"' in client.get("/approvals/").text
