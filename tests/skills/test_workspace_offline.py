"""The seeded Workspace assistant on the built-in offline model: plain requests reach the right tool,
and the answer reports what the tool did."""

from __future__ import annotations

from app.extensions import db
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import sync_folder
from app.models import Agent, KnowledgeBase
from app.seed import DOCS_KB, WORKSPACE_ASSISTANT
from app.tables.records import page_of_rows, select_rows
from app.tables.schema import get_table
from tests.chat_driver import outcome, send, start_chat


def workspace_chat(app, client) -> int:
    with app.app_context():
        agent_id = db.session.scalar(db.select(Agent.id).where(Agent.name == WORKSPACE_ASSISTANT))
    return start_chat(app, client, agent_id)


def test_the_offline_workspace_assistant_creates_a_table_then_adds_a_row(app, client, auth):
    auth.login_as("admin")
    conversation_id = workspace_chat(app, client)

    run, message = outcome(app, send(app, client, conversation_id, "create a table Contacts with name and email"))
    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["name"] == "create_table" and not step["failed"], step
    with app.app_context():
        definition = get_table("contacts")
        assert (definition.label, [f.name for f in definition.fields]) == ("Contacts", ["name", "email"])
        table_id = definition.id
    assert "Offline model" in message.content
    assert "Created the table Contacts (contacts, id" in message.content and "name, email" in message.content

    run, message = outcome(app, send(app, client, conversation_id,
                                     "add a row to Contacts: name Ada, email ada@example.org"))
    [step] = message.steps
    assert step["name"] == f"create_rows_in_table_{table_id}" and not step["failed"], step
    assert "Created 1 row in Contacts." in message.content
    with app.app_context():
        definition = get_table("contacts")
        [row] = page_of_rows(definition, select_rows(definition), 1, 10).items
        assert (row["name"], row["email"]) == ("Ada", "ada@example.org")


def test_the_offline_assistant_reports_a_refusal_as_it_came(app, client, auth):
    auth.login_as("user", name="Mallory")
    conversation_id = workspace_chat(app, client)
    run, message = outcome(app, send(app, client, conversation_id, "create a table Contacts with name and email"))
    [step] = message.steps
    assert step["failed"]
    assert "failed: Refused: Mallory (role user) may not create tables" in message.content
    with app.app_context():
        assert get_table("contacts") is None


def test_the_offline_assistant_answers_a_product_question_from_the_docs(app, client, auth):
    with app.app_context():
        kb = db.session.scalar(db.select(KnowledgeBase).where(KnowledgeBase.name == DOCS_KB))
        sync_folder(kb)
        db.session.commit()
        index_knowledge_base(kb.id)
    auth.login_as("user")
    conversation_id = workspace_chat(app, client)

    run, message = outcome(app, send(app, client, conversation_id, "What is compaction?"))
    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert step["name"] == "search_knowledge" and not step["failed"], step
    assert "compaction" in str(step["args"]).lower()
    assert "/knowledge/passages/" in message.content, message.content
    assert message.meta["knowledge"]["citations"], message.meta
