"""Deleted text stays deleted on disk (defect 16 of issue 10): after a purge no copy remains in
SQLite's files (the `-wal` included) nor in the embedded vector store's files.

The tests write a unique marker, delete it through the app, and grep the real files for it.
PostgreSQL keeps dead tuples until VACUUM (docs/architecture.md, "Deletion on disk"): what is checked
there is the SQLite build, the default.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy import JSON, String, Text, inspect, text

from app.extensions import db
from app.knowledge.embeddings import embedder_from_config
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import put_document
from app.knowledge.memories import remember
from app.models import KnowledgeBase, Memory
from tests.chat_driver import chat_model, send, start_chat, words
from tests.conftest import PASSWORD, make_agent, make_user
from tests.skill_chat import Script, chat_with, scripted

BIG = 3  # a marker repeated in a long message, so its pages overflow and are freed too


def files_with(paths: list[Path], marker: str) -> list[str]:
    """The files (and how many copies each holds) that still contain the marker."""
    needle = marker.encode()
    found = []
    for path in paths:
        if path.is_file():
            count = path.read_bytes().count(needle)
            if count:
                found.append(f"{path.name}: {count}")
    return found


def sqlite_files(app) -> list[Path]:
    with app.app_context():
        database = Path(db.engine.url.database)
    return [database, database.with_name(database.name + "-wal"), database.with_name(database.name + "-journal")]


@pytest.mark.skipif(bool(os.environ.get("SKILLDESK_TEST_DATABASE_URL")),
                    reason="SQLite's own files; PostgreSQL's dead tuples until VACUUM are documented")
def test_a_deleted_conversation_leaves_no_copy_in_the_sqlite_files_or_the_wal(
        app, client, auth, scripted_model):
    marker = f"PURPLE-GIRAFFE-{uuid.uuid4().hex}"
    auth.login_as("user")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, words(f"Noted {marker}")))
    send(app, client, conversation_id, f"Remember {marker} " + "padding " * 800 + marker * BIG)
    client.post(f"/chat/{conversation_id}/rename", data={"title": marker[:60]})
    assert files_with(sqlite_files(app), marker), "the test wrote nothing to find"
    assert client.post(f"/chat/{conversation_id}/delete").status_code in (200, 302)
    assert files_with(sqlite_files(app), marker) == []


@pytest.fixture
def own_chroma(app, tmp_path):
    app.config["CHROMA_PATH"] = str(tmp_path / "chroma")
    embedder_from_config({"EMBEDDINGS": "minilm"}).embed(["warm up"])
    return tmp_path / "chroma"


def chroma_files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def test_a_deleted_users_memories_leave_no_copy_in_the_vector_store(app, client, auth, own_chroma):
    marker = f"ORANGE-OKAPI-{uuid.uuid4().hex}"
    user_id = auth.create("user")
    with app.app_context():
        remember(f"The user's locker code is {marker}", user_id=user_id, agent_id=None, personal=True)
        remember("A memory of someone else", user_id=auth.create("user"), agent_id=None, personal=True)
    assert files_with(chroma_files(own_chroma), marker), "the test wrote nothing to find"
    auth.login_as("admin")
    assert client.post(f"/admin/users/{user_id}/delete").status_code == 302
    assert files_with(chroma_files(own_chroma), marker) == []
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Memory.id)).where(Memory.user_id == user_id)) == 0


def test_a_forgotten_memory_leaves_no_copy_in_a_shared_collection(app, client, auth, own_chroma):
    marker = f"TEAL-TAPIR-{uuid.uuid4().hex}"
    user_id = auth.login_as("user")
    with app.app_context():
        agent_id = make_agent().id
        memory, _ = remember(f"Shared fact {marker}", user_id=user_id, agent_id=agent_id, personal=False)
        remember("Another shared fact that stays", user_id=user_id, agent_id=agent_id, personal=False)
        memory_id = memory.id
    assert files_with(chroma_files(own_chroma), marker)
    assert client.post(f"/memories/{memory_id}/delete").status_code in (200, 302)
    assert files_with(chroma_files(own_chroma), marker) == []


# Deleting a knowledge document (defect 5 of issue 25): its text leaves the knowledge tables, the database's
# files and the vector store; chats that had retrieved it keep what they quoted, as the confirmation says.

CHAT_COLUMNS = {"messages.steps", "conversations.model_context", "shares.snapshot", "run_events.data"}


def rows_with(app, marker: str) -> set[str]:
    """The live columns (table.column) whose text holds the marker, in every table of the database."""
    found = set()
    with app.app_context():
        inspector = inspect(db.engine)
        with db.engine.connect() as connection:
            for table in inspector.get_table_names():
                for column in inspector.get_columns(table):
                    if not isinstance(column["type"], String | Text | JSON):
                        continue
                    count = connection.execute(
                        text(f'SELECT count(*) FROM "{table}" WHERE CAST("{column["name"]}" AS TEXT) LIKE :marker'),
                        {"marker": f"%{marker}%"}).scalar()
                    if count:
                        found.add(f"{table}.{column['name']}")
    return found


def handbook(app, marker: str) -> tuple[int, int]:
    """A knowledge base whose document "Vault" holds the marker, indexed; returns its and the document's ids."""
    with app.app_context():
        kb = KnowledgeBase(name="Handbook", roles=["admin", "user"])
        db.session.add(kb)
        db.session.commit()
        body = f"# Vault\n\nThe vault code is {marker}.\n\n" + "Padding about the vault. " * 60 + marker * BIG
        document = put_document(kb, "upload:vault.md", "vault.md", body.encode())
        put_document(kb, "upload:other.md", "other.md", b"# Lunch\n\nLunch is served at noon in the hall.")
        db.session.commit()
        index_knowledge_base.delay(kb.id)
        return kb.id, document.id


def test_a_deleted_document_leaves_no_copy_in_the_database_files_nor_in_the_vector_store(app, client, auth,
                                                                                        own_chroma):
    marker = f"VIOLET-VAULT-{uuid.uuid4().hex}"
    kb_id, document_id = handbook(app, marker)
    assert "knowledge_passages.text" in rows_with(app, marker), "the test indexed nothing to find"
    auth.login_as("admin")
    page = client.get(f"/admin/knowledge/{kb_id}")
    assert "Chats that already quoted its passages keep those quotes" in page.text  # the confirmation says it
    assert client.post(f"/admin/knowledge/documents/{document_id}/delete").status_code == 302
    assert rows_with(app, marker) == set()
    if not os.environ.get("SKILLDESK_TEST_DATABASE_URL"):  # PostgreSQL: dead tuples until VACUUM (documented)
        assert files_with(sqlite_files(app), marker) == []
    assert files_with(chroma_files(own_chroma), marker) == []


def test_a_deleted_knowledge_base_leaves_no_copy_outside_the_chats_that_quoted_it(app, client, auth,
                                                                                 scripted_model, own_chroma):
    marker = f"INDIGO-INGOT-{uuid.uuid4().hex}"
    kb_id, _document_id = handbook(app, marker)
    script = Script([("search_knowledge", {"query": "what is the vault code"})], "The code is in the vault [1].")
    with app.app_context():
        agent_id = make_agent("Librarian", skills=[{"name": "knowledge", "config": {}}],
                              model_config_id=scripted(scripted_model, script)).id
    reader = app.test_client()
    with app.app_context():
        email = make_user("user").email
    assert reader.post("/login", data={"email": email, "password": PASSWORD}).status_code == 302
    _run, message = chat_with(app, reader, agent_id, "What is the vault code?")
    assert marker in message.steps[0]["result"], "the chat retrieved nothing"
    auth.login_as("admin")
    assert "Chats that already quoted its passages keep those quotes" in client.get(f"/admin/knowledge/{kb_id}").text
    assert client.post(f"/admin/knowledge/{kb_id}/delete").status_code == 302
    left = rows_with(app, marker)
    assert left and left <= CHAT_COLUMNS, f"the knowledge tables kept a copy: {left - CHAT_COLUMNS}"
    assert files_with(chroma_files(own_chroma), marker) == []
    page = reader.get(f"/chat/{message.conversation_id}")  # the chat still opens, with what it quoted
    assert page.status_code == 200 and marker in page.text
