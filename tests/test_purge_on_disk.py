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

from app.extensions import db
from app.knowledge.embeddings import embedder_from_config
from app.knowledge.memories import remember
from app.models import Memory
from tests.chat_driver import chat_model, send, start_chat, words
from tests.conftest import make_agent

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
