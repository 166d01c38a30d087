"""Notifications when a run starts waiting: e-mail through a real SMTP server on 127.0.0.1, a trigger's webhook.

Neither carries the tool's arguments unless the admin allowed it; a server that is down leaves the run
waiting, the failure logged and shown to admins, and the scheduler sends it once the server is back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from datetime import timedelta
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler

from aiosmtpd.controller import Controller

from app.extensions import db
from app.models import Notification, Trigger
from app.models.base import utcnow
from app.waiting import notify
from tests.chat_driver import send, start_chat
from tests.conftest import make_user
from tests.local_http import QuietHandler, serving
from tests.waiting.scenario import approval_agent, fire, stored_run, waiting_call, webhook_trigger


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Inbox:
    """What an SMTP server received: (recipients, parsed message) per mail."""

    def __init__(self) -> None:
        self.mails: list[tuple[list[str], object]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
        self.mails.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content)))
        return "250 OK"


@contextlib.contextmanager
def smtp_server(port: int):
    """A real SMTP server (aiosmtpd) on 127.0.0.1:port until the block ends."""
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, ready_timeout=60)
    controller.start()
    try:
        yield inbox
    finally:
        controller.stop()


def use_smtp(app, port: int) -> None:
    app.config.update(SMTP_HOST="127.0.0.1", SMTP_PORT=port, SMTP_SECURITY="none", SMTP_FROM="desk@example.org",
                      PUBLIC_URL="https://desk.example.org")


def notifications(app) -> list[Notification]:
    with app.app_context():
        rows = list(db.session.scalars(db.select(Notification).order_by(Notification.id)))
        db.session.expunge_all()
        return rows


def body_of(mail) -> str:
    return mail.get_content() if hasattr(mail, "get_content") else mail.get_payload(decode=True).decode()


def test_an_unattended_run_that_waits_emails_the_people_who_may_decide_without_the_arguments(
        app, client, auth, scripted_model):
    port = free_port()
    use_smtp(app, port)
    owner_id = auth.login_as("admin", email="olga@example.org")
    with app.app_context():
        runner_id = make_user("user", email="rita@example.org").id
        make_user("user", email="bystander@example.org")
    agent_id = approval_agent(app, scripted_model, [])
    trigger_id, path = webhook_trigger(app, agent_id, run_as_id=runner_id, owner_id=owner_id, name="Cleanup hook")
    with smtp_server(port) as inbox:
        run = fire(app, client, path, record=4242)
    assert sorted(to for to, _mail in inbox.mails) == [["olga@example.org"], ["rita@example.org"]]
    _to, mail = inbox.mails[0]
    text = body_of(mail)
    assert mail["Subject"].startswith("Skilldesk: Clerk") and mail["From"] == "desk@example.org"
    assert "run the tool delete_record" in text and "started by the trigger Cleanup hook" in text
    assert "https://desk.example.org/approvals/" in text and "until" in text
    assert "record_id" not in text  # no arguments unless the admin allowed it (ids and times may hold 4242)
    assert [n.status for n in notifications(app)] == ["sent", "sent"]
    assert stored_run(app, run.id).status == "waiting"

    with app.app_context():  # the admin allows the trigger's notifications to carry the arguments
        db.session.get(Trigger, trigger_id).notify_arguments = True
        db.session.commit()
    with smtp_server(port) as inbox:
        fire(app, client, path, record=4343)
    assert len(inbox.mails) == 2 and all("record_id" in body_of(mail) and "4343" in body_of(mail)
                                         for _to, mail in inbox.mails)


def test_a_chats_approval_emails_the_agents_approvers_not_the_owner_who_is_in_the_chat(
        app, client, auth, scripted_model):
    port = free_port()
    use_smtp(app, port)
    with app.app_context():
        approver_id = make_user("user", email="ada@example.org").id
    agent_id = approval_agent(app, scripted_model, [])
    with app.app_context():
        from app.models import Agent
        db.session.get(Agent, agent_id).approver_ids = [approver_id]
        db.session.commit()
    auth.login_as("user", email="chris@example.org")
    conversation_id = start_chat(app, client, agent_id)
    with smtp_server(port) as inbox:
        send(app, client, conversation_id, "delete 5")
    assert [to for to, _mail in inbox.mails] == [["ada@example.org"]]
    assert "in a chat of chris@example.org" in body_of(inbox.mails[0][1])


def test_an_smtp_server_that_is_down_leaves_the_run_waiting_logs_shows_admins_and_sends_later(
        app, client, auth, scripted_model, caplog):
    port = free_port()  # nothing listens here yet
    use_smtp(app, port)
    owner_id = auth.login_as("admin", email="olga@example.org")
    agent_id = approval_agent(app, scripted_model, [])
    _trigger_id, path = webhook_trigger(app, agent_id, owner_id=owner_id)
    with caplog.at_level(logging.WARNING, logger="app.waiting.notify"):
        run = fire(app, client, path)
    assert stored_run(app, run.id).status == "waiting" and waiting_call(app, run.id).status == "pending"
    failed = notifications(app)
    assert {n.status for n in failed} == {"failed"} and all("Connection refused" in n.error for n in failed)
    assert any("failed, try 1" in record.getMessage() for record in caplog.records)
    page = client.get("/runs/").text
    assert 'id="failed-notifications"' in page and 'data-testid="notification" data-status="failed"' in page
    assert "Connection refused" in page
    assert f'id="inbox-call-{waiting_call(app, run.id).id}"' in client.get("/approvals/").text  # nothing is lost

    with smtp_server(port) as inbox:
        with app.app_context():
            assert notify.retry_due(utcnow() + timedelta(minutes=1)) == 0  # not before the retry interval
            assert notify.retry_due(utcnow() + timedelta(minutes=6)) == len(failed)
    assert len(inbox.mails) == len(failed) and {n.status for n in notifications(app)} == {"sent"}
    assert 'id="failed-notifications"' not in client.get("/runs/").text


class Hook(QuietHandler):
    received: list[dict] = []
    status = 200

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length") or 0)
        type(self).received.append(json.loads(self.rfile.read(length)))
        self.reply(b"ok", status=type(self).status)


def test_a_triggers_notification_webhook_is_called_through_the_outbound_guard(app, client, auth, scripted_model):
    owner_id = auth.login_as("admin")
    agent_id = approval_agent(app, scripted_model, [])
    handler: type[BaseHTTPRequestHandler] = type("Received", (Hook,), {"received": []})
    with serving(handler) as server:
        url = f"http://127.0.0.1:{server.server_port}/waiting"
        trigger_id, path = webhook_trigger(app, agent_id, owner_id=owner_id, name="Paged hook", notify_url=url)
        refused = fire(app, client, path, record=61)  # 127.0.0.1 is not allowed by the admin: refused
        [row] = notifications(app)
        assert (row.channel, row.status) == ("webhook", "failed") and "OutboundRefused" in row.error
        assert handler.received == [] and stored_run(app, refused.id).status == "waiting"

        app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
        run = fire(app, client, path, record=62)
        [payload] = handler.received
        call = waiting_call(app, run.id)
        assert payload["event"] == "run.waiting" and payload["run"] == {"id": run.id, "status": "waiting",
                                                                        "waitingFor": "approval"}
        assert payload["trigger"] == {"id": trigger_id, "name": "Paged hook"} and payload["agent"].startswith("Clerk")
        [sent_call] = payload["calls"]
        assert (sent_call["id"], sent_call["tool"], sent_call["expiresAt"]) == (call.id, "delete_record",
                                                                                 call.expires_at.isoformat())
        # what a call says without its arguments (the numbers of ids and times may hold any digits)
        assert set(sent_call) == {"id", "kind", "tool", "status", "createdAt", "expiresAt"}
        assert "record_id" not in json.dumps(payload)

        handler.status = 500  # a webhook that errs: recorded, the run waits
        fire(app, client, path, record=63)
        assert notifications(app)[-1].status == "failed" and "answered 500" in notifications(app)[-1].error
