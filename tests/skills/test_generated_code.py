"""Generate and run JavaScript in real runs: the code kept in the run, one retry, the offered callbacks."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from app.chat import turns
from app.extensions import db
from app.models import RunEvent, User
from app.skills.generated_code import Config, describe_tool
from app.tables import records, schema
from tests.conftest import make_agent
from tests.local_http import QuietHandler, serving
from tests.skill_chat import Script, chat, scripted


class Page(QuietHandler):
    def do_GET(self) -> None:
        self.reply(b'{"rate": 1.08}', "application/json")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serving(Page) as httpd:
        yield f"http://127.0.0.1:{httpd.server_port}"


def code(source: str) -> list[tuple[str, dict]]:
    return [("run_javascript", {"code": source})]


def said(step: dict) -> str:
    """Return what a tool step returned; a failed result is stored as {"error": "..."}."""
    return json.loads(step["result"])["error"] if step["failed"] else step["result"]


def make_table(app, name: str, read: list[str], insert: list[str]) -> None:
    with app.app_context():
        definition = schema.create_table(name, name.title())
        schema.add_field(definition, "item", "Item", "text", required=True)
        schema.add_field(definition, "status", "Status", "choice", choices=["open", "shipped"])
        definition.permissions = {"read": read, "insert": insert, "update": [], "delete": []}
        db.session.flush()
        for item, status in [("desk", "open"), ("lamp", "shipped"), ("chair", "open")]:
            records.insert_row(definition, {"item": item, "status": status})
        db.session.commit()


def items(app, name: str) -> list[str]:
    with app.app_context():
        table = schema.sql_table(schema.get_table(name))
        return list(db.session.scalars(select(table.c.item).order_by(table.c.id)))


def test_the_code_runs_and_is_kept_in_the_run_for_admins_to_read(app, client, auth, scripted_model):
    auth.login_as("user")
    source = ("console.log('summing');\n"
              "return {total: [1, 2, 3].reduce((a, b) => a + b), offered: Object.keys(skilldesk)}")
    script = Script(code(source))

    run, message = chat(app, client, "generated_code", {}, model_id=scripted(scripted_model, script))

    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert json.loads(step["args"]) == {"code": source}
    assert json.loads(step["result"]) == {"result": {"total": 6, "offered": []}, "console": ["summing"]}
    with app.app_context():
        call = db.session.scalar(db.select(RunEvent).where(RunEvent.run_id == run.id,
                                                           RunEvent.type == "tool_call"))
        assert json.loads(call.data["args"]) == {"code": source}
    [tool] = script.infos[0].function_tools
    assert tool.name == "run_javascript" and "skilldesk." not in tool.description


def test_admins_read_the_code_of_an_unattended_run_on_the_runs_page(app, client, auth, scripted_model):
    script = Script(code("return 6 * 7;"))
    model_id = scripted_model(function=script.respond, stream_function=script.stream)
    auth.login_as("admin")
    with app.app_context():
        agent = make_agent("Nightly", skills=[{"name": "generated_code", "config": {}}],
                           model_config_id=model_id)
        owner = db.session.scalar(db.select(User).where(User.role == "admin"))
        run = turns.run_unattended(agent, owner, "Compute the answer", source="schedule")
        assert run.status == "succeeded", run.error

    page = client.get("/runs/")

    assert page.status_code == 200
    assert "run_javascript" in page.text and "return 6 * 7;" in page.text


def test_an_error_comes_back_once_for_a_fix(app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script(code("return totl + 1;"), code("const total = 41;\nreturn total + 1;"))

    run, message = chat(app, client, "generated_code", {}, model_id=scripted(scripted_model, script))

    assert run.status == "succeeded", run.error
    broken, fixed = message.steps
    assert broken["failed"] and not fixed["failed"] and fixed["result"] == "42"
    [(retry, attempt)] = script.retries  # a retry the tool asked for, counted against its budget
    assert "ReferenceError: totl is not defined (line 1)" in retry and "Fix the code" in retry
    assert attempt == 1


def test_a_second_failure_is_a_plain_failed_result(app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script(code("return totl + 1;"), code("while (true) {}"))

    run, message = chat(app, client, "generated_code", {"timeout_seconds": 0.5},
                        model_id=scripted(scripted_model, script))

    assert run.status == "succeeded", run.error
    _broken, again = message.steps
    assert again["failed"]
    assert said(again).startswith("The JavaScript failed: JavaScript ran longer than 0.5 s")
    assert said(again).endswith("It failed again after one retry.")


def test_read_only_tables_offer_no_insert_and_respect_the_users_role(app, client, auth, scripted_model):
    make_table(app, "orders", read=["user"], insert=["user"])
    make_table(app, "salaries", read=[], insert=[])
    auth.login_as("user")
    source = """
      const offered = Object.keys(skilldesk);
      const tables = (await skilldesk.tables()).map((t) => t.name);
      const open = await skilldesk.query("orders", {filters: [{field: "status", op: "eq", value: "open"}]});
      let secret;
      try { await skilldesk.query("salaries"); } catch (e) { secret = e.message; }
      return {offered, tables, open: open.map((row) => row.item), secret};
    """

    run, message = chat(app, client, "generated_code", {"read_tables": True},
                        model_id=scripted(scripted_model, Script(code(source))))

    assert run.status == "succeeded", run.error
    assert json.loads(message.steps[0]["result"]) == {
        "offered": ["query", "tables"], "tables": ["orders"], "open": ["desk", "chair"],
        "secret": "LookupError: There is no table 'salaries' you may read; skilldesk.tables() lists them.",
    }
    assert items(app, "orders") == ["desk", "lamp", "chair"]


def test_inserts_need_the_setting_and_the_tables_permission(app, client, auth, scripted_model):
    make_table(app, "orders", read=["user"], insert=["user"])
    make_table(app, "archive", read=["user"], insert=[])
    auth.login_as("user")
    source = """
      const row = await skilldesk.insert("orders", {item: "shelf", status: "open"});
      let refused;
      try { await skilldesk.insert("archive", {item: "shelf"}); } catch (e) { refused = e.message; }
      return {id: row.id, item: row.item, offered: Object.keys(skilldesk), refused};
    """

    run, message = chat(app, client, "generated_code", {"insert_rows": True},
                        model_id=scripted(scripted_model, Script(code(source))))

    result = json.loads(message.steps[0]["result"])
    assert result["item"] == "shelf" and result["offered"] == ["insert"]
    assert result["refused"] == "PermissionError: You may not insert rows of the table 'archive'."
    assert items(app, "orders") == ["desk", "lamp", "chair", "shelf"]
    assert items(app, "archive") == ["desk", "lamp", "chair"]


def test_a_role_change_applies_within_the_run(app, client, auth, scripted_model):
    make_table(app, "orders", read=["user", "guest"], insert=["user"])
    user_id = auth.login_as("user")
    source = ("try { return (await skilldesk.insert('orders', {item: 'shelf'})).item; }\n"
              "catch (e) { return e.message; }")

    class DemotedMidRun(Script):
        def respond(self, messages, info):
            if len(self.infos) == 1:  # after the first run of the code, an admin makes the user a guest
                with app.app_context():
                    db.session.get(User, user_id).role = "guest"
                    db.session.commit()
            return super().respond(messages, info)

    _run, message = chat(app, client, "generated_code", {"insert_rows": True},
                         model_id=scripted(scripted_model, DemotedMidRun(code(source), code(source))))

    before, after = message.steps
    assert before["result"] == "shelf"
    assert after["result"] == "PermissionError: You may not insert rows of the table 'orders'."
    assert items(app, "orders") == ["desk", "lamp", "chair", "shelf"]


def test_fetch_goes_through_the_guarded_client(app, client, auth, scripted_model, site):
    auth.login_as("user")
    app.config["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    source = f"""
      const answer = await skilldesk.fetch("{site}/rate");
      let refused;
      try {{ await skilldesk.fetch("http://169.254.169.254/latest/meta-data/"); }}
      catch (e) {{ refused = e.message; }}
      return {{status: answer.status, rate: JSON.parse(answer.text).rate, refused}};
    """

    _run, message = chat(app, client, "generated_code", {"allow_fetch": True},
                         model_id=scripted(scripted_model, Script(code(source))))

    result = json.loads(message.steps[0]["result"])
    assert (result["status"], result["rate"]) == (200, 1.08)
    assert result["refused"].startswith("OutboundRefused: refused http://169.254.169.254/latest/meta-data/")


def test_calls_are_capped_per_run(app, client, auth, scripted_model):
    make_table(app, "orders", read=["user"], insert=[])
    auth.login_as("user")
    source = "for (let i = 0; i < 5; i++) await skilldesk.tables(); return 'all done';"

    _run, message = chat(app, client, "generated_code", {"read_tables": True, "max_calls": 3},
                         model_id=scripted(scripted_model, Script(code(source), code(source))))

    _first, second = message.steps
    assert "CallBudgetExceeded: this code may make at most 3 skilldesk calls per run" in said(second)


def test_the_description_names_only_the_offered_functions():
    assert "skilldesk" not in describe_tool(Config())
    text = describe_tool(Config(read_tables=True, allow_fetch=True))
    assert "skilldesk.query" in text and "skilldesk.fetch" in text and "skilldesk.insert" not in text
