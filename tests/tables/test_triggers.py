"""Triggers: table events, webhooks and schedules run agents unattended; runs are listed at /runs."""

from __future__ import annotations

import io
import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest
from pydantic_ai.exceptions import ModelHTTPError

from app.extensions import db
from app.models import Conversation, Message, Run, Trigger, TriggerRun
from app.models.tables import new_hook_token
from app.tables.records import get_row, insert_row, validate
from app.tables.schema import get_table
from app.triggers.schedules import fire_due, is_due
from tests.chat_driver import chat_model
from tests.conftest import make_agent, make_user

_runners = itertools.count(1)


def add_trigger(app, kind: str = "event", prompt: str = "New order from {{ row.customer }}", **fields) -> int:
    """Create a trigger run as a new user (with the offline model unless an agent is given)."""
    with app.app_context():
        agent_id = (
            fields.pop("agent_id", None) or make_agent("Clerk", skills=[{"name": "clock", "config": {}}]).id
        )
        run_as_id = (
            fields.pop("run_as_id", None) or make_user("user", email=f"runner{next(_runners)}@example.org").id
        )
        table = get_table(fields.pop("table", "orders")) if kind == "event" else None
        trigger = Trigger(
            name=fields.pop("name", "On new order"),
            kind=kind,
            agent_id=agent_id,
            run_as_id=run_as_id,
            prompt=prompt,
            table_id=table.id if table else None,
            events=fields.pop("events", ["insert"] if kind == "event" else []),
            token=new_hook_token() if kind == "webhook" else None,
            **fields,
        )
        db.session.add(trigger)
        db.session.commit()
        return trigger.id


def trigger_runs(app) -> list[tuple[Run, list[Message]]]:
    with app.app_context():
        runs = list(db.session.scalars(db.select(Run).where(Run.trigger != "chat").order_by(Run.created_at)))
        out = [
            (
                run,
                list(
                    db.session.scalars(
                        db.select(Message)
                        .where(Message.conversation_id == run.conversation_id)
                        .order_by(Message.id)
                    )
                ),
            )
            for run in runs
        ]
        db.session.expunge_all()
        return out


def test_an_insert_runs_the_agent_on_the_offline_model_and_the_run_is_listed_with_its_prompt(
    app, client, auth, orders
):
    add_trigger(app, prompt="New order from {{ row.customer }} for {{ row.amount }}. What time is it now?")
    auth.login_as("user")
    response = client.post("/data/orders", data={"customer": "Ada", "amount": "12.50"})
    assert response.status_code == 302

    [(run, messages)] = trigger_runs(app)
    assert run.status == "succeeded", run.error
    assert run.trigger == "table" and run.prompt == "New order from Ada for 12.5. What time is it now?"
    assert [m.role for m in messages] == ["user", "assistant"]
    assert "(Offline model)" in messages[1].content and messages[1].steps[0]["name"] == "current_time"
    with app.app_context():
        link = db.session.get(TriggerRun, run.id)
        assert (link.trigger_name, link.table_name, link.row_id) == ("On new order", "orders", 1)

    auth.logout()
    auth.login_as("admin")
    page = client.get("/runs/")
    assert page.status_code == 200
    assert f'id="run-{run.id}" data-status="succeeded"' in page.text
    assert "New order from Ada for 12.5. What time is it now?" in page.text  # the filled prompt
    assert "On new order" in page.text and "on orders #1" in page.text
    assert "(Offline model)" in page.text  # the transcript
    assert client.get("/runs", follow_redirects=True).status_code == 200


def test_a_failing_agent_leaves_the_row_and_fails_the_run_with_its_reason(
    app, client, auth, scripted_model, orders
):
    async def broken(messages, info):
        raise ModelHTTPError(503, "scripted", body={"error": {"message": "The model is overloaded"}})
        yield ""  # pragma: no cover - makes this an async generator

    with app.app_context():
        agent_id = make_agent("Broken", model_config_id=chat_model(scripted_model, broken)).id
    add_trigger(app, agent_id=agent_id)
    auth.login_as("user")
    response = client.post("/data/orders", data={"customer": "Grace"})
    assert response.status_code == 302 and response.location.endswith("/data/orders/1")

    with app.app_context():
        assert get_row(get_table("orders"), 1)["customer"] == "Grace"
    [(run, messages)] = trigger_runs(app)
    assert run.status == "failed"
    assert run.error == "The provider answered 503: The model is overloaded"
    auth.logout()
    auth.login_as("admin")
    page = client.get("/runs/?status=failed").text
    assert 'data-testid="run-error"' in page and "The model is overloaded" in page


def test_a_broken_template_records_a_failed_run_and_keeps_the_row(app, client, auth, orders):
    add_trigger(app, prompt="{{ row.customer | nosuchfilter }}")
    auth.login_as("user")
    assert client.post("/data/orders", data={"customer": "Ada"}).status_code == 302
    [(run, _messages)] = trigger_runs(app)
    assert run.status == "failed" and "prompt template could not be filled" in run.error
    with app.app_context():
        assert get_row(get_table("orders"), 1) is not None


def test_templates_are_sandboxed(app, orders):
    add_trigger(app, prompt="{{ row.__class__.__mro__ }}|{{ ''.__class__.__subclasses__() }}")
    with app.app_context():
        definition = get_table("orders")
        insert_row(definition, validate(definition, {"customer": "Ada"})[0])
    [(run, _messages)] = trigger_runs(app)
    assert run.status == "failed" and "unsafe" in run.error.lower()


def test_only_the_chosen_events_fire_and_the_conversation_id_is_written_back(app, orders):
    with app.app_context():
        from app.tables.schema import add_field

        add_field(get_table("orders"), "chat", "Chat", "integer")
        db.session.commit()
    add_trigger(
        app,
        events=["update"],
        prompt="{{ old.status }} -> {{ row.status }} ({{ event }})",
        write_back_field="chat",
    )
    with app.app_context():
        from app.tables.records import update_row

        definition = get_table("orders")
        row_id = insert_row(definition, validate(definition, {"customer": "Ada", "status": "open"})[0])
        assert trigger_runs(app) == []  # inserts do not fire an update trigger
        update_row(get_table("orders"), row_id, {"status": "closed"})
    [(run, _messages)] = trigger_runs(app)
    assert run.prompt == "open -> closed (update)"
    with app.app_context():
        assert get_row(get_table("orders"), row_id)["chat"] == run.conversation_id
        # The write-back itself fired no second update trigger.
        assert db.session.scalar(db.select(db.func.count(Run.id))) == 1


def test_an_inactive_trigger_or_one_without_a_user_does_not_fire(app, orders):
    add_trigger(app, active=False)
    add_trigger(app, name="Orphan")
    with app.app_context():
        orphan = db.session.scalar(db.select(Trigger).where(Trigger.name == "Orphan"))
        orphan.run_as_id = None
        db.session.commit()
        definition = get_table("orders")
        insert_row(definition, validate(definition, {"customer": "Ada"})[0])
    assert trigger_runs(app) == []


# --- webhooks -------------------------------------------------------------------------------------


def hook_url(app, trigger_id: int) -> str:
    with app.app_context():
        return f"/hooks/{db.session.get(Trigger, trigger_id).token}"


def test_a_webhook_runs_the_agent_with_the_body_in_the_prompt(app, client):
    trigger_id = add_trigger(
        app, kind="webhook", prompt="Ticket {{ body.ticket.id }} from {{ body.from }}", name="Helpdesk hook"
    )
    response = client.post(hook_url(app, trigger_id), json={"ticket": {"id": 42}, "from": "ada@example.org"})
    assert response.status_code == 202 and response.is_json
    [(run, _messages)] = trigger_runs(app)
    assert response.json == {"status": "succeeded", "run": run.id}
    assert run.trigger == "webhook" and run.prompt == "Ticket 42 from ada@example.org"


def test_a_wrong_or_revoked_token_is_404_and_an_oversized_body_413(app, client, auth):
    trigger_id = add_trigger(app, kind="webhook")
    url = hook_url(app, trigger_id)
    wrong = client.post("/hooks/" + new_hook_token(), json={"a": 1})
    assert wrong.status_code == 404 and wrong.json["error"] == "not_found"
    too_big = client.post(url, data=json.dumps({"pad": "x" * (64 * 1024)}), content_type="application/json")
    assert too_big.status_code == 413 and too_big.json["error"] == "too_large"
    assert trigger_runs(app) == []

    auth.login_as("admin")
    assert client.post(f"/admin/triggers/{trigger_id}/token").status_code == 302
    assert client.post(url, json={"a": 1}).status_code == 404  # the old address is revoked
    assert client.post(hook_url(app, trigger_id), json={"a": 1}).status_code == 202


def post_chunked(client, url: str, body: bytes, content_type: str = "application/json"):
    """POST a body without a Content-Length, as a chunked upload arrives from the WSGI server."""
    return client.post(url, input_stream=io.BytesIO(body), content_type=content_type,
                       headers={"Transfer-Encoding": "chunked"},
                       environ_overrides={"wsgi.input_terminated": True})


def test_a_chunked_body_over_the_limit_is_413_too(app, client):
    url = hook_url(app, add_trigger(app, kind="webhook"))
    # No Content-Length: Werkzeug alone would hand the view the first 64 KiB (then "not JSON", 400).
    response = post_chunked(client, url, b'{"pad": "' + b"x" * 100_000 + b'"}')
    assert response.status_code == 413 and response.json["error"] == "too_large"
    # One byte over is over; exactly the limit is accepted.
    limit = app.config["WEBHOOK_MAX_BYTES"]
    exact = b'{"pad": "' + b"x" * (limit - 11) + b'"}'
    assert post_chunked(client, url, exact + b" ").status_code == 413
    assert trigger_runs(app) == []
    assert post_chunked(client, url, exact).status_code == 202


def test_a_chunked_form_over_the_limit_is_413_not_a_shortened_form(app, client, auth):
    auth.create("user")
    app.config["MAX_CONTENT_LENGTH"] = 1000
    body = b"email=a%40example.org&password=" + b"x" * 2000
    response = post_chunked(client, "/login", body, "application/x-www-form-urlencoded")
    assert response.status_code == 413


@pytest.mark.parametrize(
    "body, content_type, status",
    [
        ("{not json", "application/json", 400),
        ("[1, 2]", "application/json", 400),
        ("a=1", "application/x-www-form-urlencoded", 415),
        ("hello", "text/plain", 415),
    ],
)
def test_a_webhook_wants_a_json_object(app, client, body, content_type, status):
    url = hook_url(app, add_trigger(app, kind="webhook"))
    response = client.post(url, data=body, content_type=content_type)
    assert response.status_code == status and response.is_json and response.json["message"]
    assert trigger_runs(app) == []


def test_webhooks_need_no_session_or_csrf_token(app, client, settings):
    from app import create_app

    strict = create_app({**settings, "WTF_CSRF_ENABLED": True})
    trigger_id = add_trigger(app, kind="webhook")
    response = strict.test_client().post(hook_url(app, trigger_id), json={"x": 1})
    assert response.status_code == 202
    with strict.app_context():
        db.engine.dispose()


# --- schedules ------------------------------------------------------------------------------------


def test_a_schedule_fires_once_when_its_time_has_come(app):
    trigger_id = add_trigger(app, kind="schedule", cron="0 8 * * *", prompt="Morning report for {{ today }}")
    with app.app_context():
        trigger = db.session.get(Trigger, trigger_id)
        trigger.created_at = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)
        db.session.commit()
        assert not is_due(trigger, datetime(2026, 3, 2, 7, 59, tzinfo=UTC))
        assert fire_due(datetime(2026, 3, 2, 7, 59, tzinfo=UTC)) == 0
        assert fire_due(datetime(2026, 3, 2, 8, 0, 30, tzinfo=UTC)) == 1
        assert fire_due(datetime(2026, 3, 2, 8, 1, tzinfo=UTC)) == 0  # once per time
        assert fire_due(datetime(2026, 3, 3, 8, 0, tzinfo=UTC) + timedelta(seconds=5)) == 1
    runs = trigger_runs(app)
    assert [run.trigger for run, _ in runs] == ["schedule", "schedule"]
    assert runs[0][0].prompt.startswith("Morning report for ")


def test_the_periodic_job_is_bound_to_huey(app):
    from huey.api import PeriodicTask

    huey = app.extensions["jobs"].huey
    assert any(
        isinstance(task, PeriodicTask) and task.name == "check_schedules"
        for task in huey._registry._registry.values()
        for task in [task()]
    )


# --- administration -------------------------------------------------------------------------------


def test_an_admin_creates_triggers_with_errors_beside_the_fields(app, client, auth, orders):
    admin_id = auth.login_as("admin")
    with app.app_context():
        agent_id = make_agent("Clerk").id
    base = {"name": "On order", "agent_id": agent_id, "run_as_id": admin_id, "active": "y"}
    bad = client.post(
        "/admin/triggers/", data={**base, "kind": "schedule", "cron": "every day", "prompt": "{{ unclosed"}
    )
    assert bad.status_code == 422
    assert 'id="cron-error"' in bad.text and 'id="prompt-error"' in bad.text and "Template error" in bad.text
    no_table = client.post(
        "/admin/triggers/", data={**base, "kind": "event", "events": ["insert"], "prompt": "Hi"}
    )
    assert no_table.status_code == 422 and "Choose the table" in no_table.text
    with app.app_context():
        table_id = get_table("orders").id
    ok = client.post(
        "/admin/triggers/",
        data={
            **base,
            "kind": "event",
            "table_id": table_id,
            "events": ["insert", "delete"],
            "prompt": "{{ row.customer }}",
        },
    )
    assert ok.status_code == 302
    hook = client.post("/admin/triggers/", data={**base, "name": "Hook", "kind": "webhook", "prompt": "x"})
    page = client.get(hook.location).text
    assert 'id="webhook-url"' in page and "/hooks/" in page
    with app.app_context():
        saved = {t.name: t for t in db.session.scalars(db.select(Trigger))}
        assert saved["On order"].events == ["insert", "delete"] and saved["On order"].table_id == table_id
        assert len(saved["Hook"].token) >= 40
    assert "On order" in client.get("/admin/triggers/").text


def test_the_runs_list_shows_no_private_chats(app, client, auth):
    from tests.chat_driver import send, start_chat

    auth.login_as("user")
    conversation_id = start_chat(app, client)
    send(app, client, conversation_id, "A private question")
    auth.logout()
    auth.login_as("admin")
    page = client.get("/runs/").text
    assert "A private question" not in page and 'id="runs-empty"' in page
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Conversation.id))) == 1


def test_the_admin_pages_of_every_kind_of_trigger_render(app, client, auth, orders):
    auth.login_as("admin")
    ids = [
        add_trigger(app, name="Event trigger"),
        add_trigger(app, kind="webhook", name="Hook trigger"),
        add_trigger(app, kind="schedule", name="Morning", cron="0 8 * * 1-5"),
    ]
    listing = client.get("/admin/triggers/").text
    assert "Event trigger" in listing and "Hook trigger" in listing and "<code>0 8 * * 1-5</code>" in listing
    assert "next " in listing
    for trigger_id in ids:
        assert client.get(f"/admin/triggers/{trigger_id}").status_code == 200
    assert "Next run:" in client.get(f"/admin/triggers/{ids[2]}").text
    assert client.get("/admin/triggers/new?table=1").status_code == 200
    assert client.get("/admin/tables/orders/import").status_code == 200
    assert client.post(f"/admin/triggers/{ids[0]}/token").status_code == 404  # only webhooks have addresses
    assert client.post(f"/admin/triggers/{ids[0]}/delete").status_code == 302
    with app.app_context():
        assert db.session.get(Trigger, ids[0]) is None
