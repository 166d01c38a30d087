"""Runs: each case on a disposable database (the real one untouched), and a record of everything it ran on."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sqlalchemy import func, inspect, select

from app.evals.reports import compare, export
from app.evals.runner import config_revision, create_run, execute
from app.extensions import db
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import put_document, vector_store
from app.models import (
    Conversation,
    DataTable,
    EvalRun,
    KnowledgeBase,
    KnowledgeDocument,
    KnowledgePassage,
    Message,
    Run,
    User,
)
from tests.conftest import make_agent

DATASET = """
name: sample
cases:
  - id: makes-a-table
    prompt: Create a table Contacts.
    fixture:
      - {name: projects, fields: [{name: title}], rows: [{title: Apollo}]}
    replies:
      - calls: [{tool: create_table, args: {label: Contacts, fields: [{name: email, label: Email, kind: text}]}}]
      - text: Created the table Contacts.
    checks:
      tools: {called: [create_table]}
      state: {rows_exist: [{table: projects, values: {title: Apollo}}]}
  - id: fails-on-purpose
    prompt: Hello
    replies: [{text: I have deleted everything.}]
    checks: {answer: {no_unsupported_success: true, contains: [hello]}}
  - id: skipped-one
    prompt: Hello
    skip: waits for the knowledge skill
  - id: live-only
    prompt: Hello
    model: agent
"""


def counts() -> dict[str, int]:
    return {model.__tablename__: db.session.scalar(select(func.count()).select_from(model))
            for model in (User, Conversation, Message, Run, DataTable, KnowledgeBase, KnowledgeDocument,
                          KnowledgePassage)}


def collections() -> dict[str, int]:
    """The real vector store's collections and how many records each holds."""
    store = vector_store()
    return {c.name: store.count(c.name) for c in store.client.list_collections()}


CITATIONS = Path(__file__).parents[2] / "evals" / "citations.yaml"


def run_sample(app, tmp_path, agent_skills=None):
    (tmp_path / "sample.yaml").write_text(DATASET)
    app.config["EVALS_PATH"] = str(tmp_path)
    agent = make_agent("Evaluated", skills=agent_skills or [{"name": "workspace", "config": {}}])
    run = create_run("sample", agent.name, level=1)
    db.session.commit()
    return agent, execute(run.id)


def test_cases_run_on_a_disposable_database_and_leave_the_real_one_untouched(app, tmp_path):
    with app.app_context():
        # A real knowledge base with vectors, whose collection name a case's knowledge base may share.
        real = KnowledgeBase(name="Real handbook")
        db.session.add(real)
        db.session.commit()
        vector_store().drop(real.collection)  # an id reused after an earlier test's rows were emptied
        put_document(real, "upload:real.md", "real.md", b"# Real\n\nThe real backups run weekly.")
        db.session.commit()
        index_knowledge_base.delay(real.id)
        tables_before = set(inspect(db.engine).get_table_names())
        before, vectors_before = counts(), collections()
        assert vectors_before[real.collection] == 1
        agent, run = run_sample(app, tmp_path)
        assert run.status == "finished", run.error
        first = run.results[0]
        assert first.passed, first.verdicts
        # Three cases indexed a knowledge base of their own, in their own database and vector store.
        cited = create_run(str(CITATIONS), agent.name)
        db.session.commit()
        cited = execute(cited.id)
        assert (cited.status, cited.done, cited.passed) == ("finished", 3, 3), cited.error
        assert "search_knowledge" in [s["name"] for s in cited.results[0].steps]
        # The cases created tables, knowledge bases and vectors and ran conversations: none of it is here.
        assert counts() == before
        assert set(inspect(db.engine).get_table_names()) == tables_before
        assert collections() == vectors_before
        vector_store().drop(real.collection)


def test_a_run_records_every_field(app, tmp_path):
    with app.app_context():
        agent, run = run_sample(app, tmp_path)
        db.session.expire_all()
        run = db.session.get(EvalRun, run.id)
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        assert run.source_revision == (head or "unknown")
        assert run.config_revision == config_revision(run.population["agent"]) and len(run.config_revision) == 64
        assert run.agent_id == agent.id and run.agent_name == agent.name and run.level == 1
        assert run.model["per_case"] == {"makes-a-table": "scripted", "fails-on-purpose": "scripted"}
        assert run.population["cases"] == ["makes-a-table", "fails-on-purpose"] and run.population["total"] == 4
        assert run.population["skipped"] == [
            {"case": "skipped-one", "reason": "waits for the knowledge skill"},
            {"case": "live-only", "reason": "needs a live model (level 2)"}]
        assert (run.total, run.done, run.passed) == (2, 2, 1)
        assert run.started_at and run.finished_at and run.finished_at >= run.started_at
        made, failed = run.results
        assert [s["name"] for s in made.steps] == ["create_table"] and not made.steps[0]["failed"]
        assert made.requests == 2 and made.input_tokens > 0 and made.output_tokens > 0 and made.seconds > 0
        assert [m["role"] for m in made.transcript] == ["user", "assistant"]
        assert all(v["passed"] for v in made.verdicts) and len(made.verdicts) == 2
        assert not failed.passed and failed.status == "succeeded" and failed.errors == []
        assert {v["check"]: v["passed"] for v in failed.verdicts} == {
            "answer.contains: hello": False, "answer.no_unsupported_success": False}
        assert failed.transcript[-1]["content"] == "I have deleted everything."


def test_another_agent_configuration_is_another_revision(app, tmp_path):
    with app.app_context():
        _a, first = run_sample(app, tmp_path)
        other = make_agent("Other", skills=[{"name": "workspace", "config": {"max_created_rows": 5}}])
        second = create_run("sample", other.name)
        assert second.config_revision != first.config_revision


def test_a_comparison_lists_exactly_the_flipped_cases(app, tmp_path):
    with app.app_context():
        _agent, first = run_sample(app, tmp_path)
        # The second run: the failing case now answers as checked, the passing one breaks its check.
        fixed = DATASET.replace("I have deleted everything.", "Hello there and nothing changed.").replace(
            "tools: {called: [create_table]}", "tools: {called: [create_table], not_called: [create_table]}")
        (tmp_path / "sample.yaml").write_text(fixed)
        queued = create_run("sample", first.agent_name)
        db.session.commit()
        second = execute(queued.id)
        report = compare(first, second)
        assert report["flipped"] == [{"case": "makes-a-table", "before": True, "after": False},
                                     {"case": "fails-on-purpose", "before": False, "after": True}]
        assert (report["fixed"], report["broken"]) == (["fails-on-purpose"], ["makes-a-table"])
        assert report["only_before"] == report["only_after"] == []
        assert set(report["deltas"]) == {"input_tokens", "output_tokens", "seconds"}
        assert compare(second, second)["flipped"] == []
        data = export(second)
        assert data["passed"] == 1 and [r["case_id"] for r in data["results"]] == ["makes-a-table", "fails-on-purpose"]
