"""A knowledge base syncs only from the folders the server allows, and never reads past its folder.

The form took any path: an admin could point a base at /etc (or /) and publish what it read to every
role the base names, and a symlink inside an allowed folder read any file its name made look like a
document. Allowed: Skilldesk's own docs/ and the folders of KNOWLEDGE_FOLDERS.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.extensions import db
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import sync_folder
from app.models import KnowledgeBase, KnowledgeDocument
from tests.knowledge.test_admin_form import error_beside


@pytest.fixture
def allowed(app, tmp_path) -> Path:
    root = tmp_path / "shared"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nBackups run nightly.")
    app.config["KNOWLEDGE_FOLDERS"] = str(root)
    return root


def kb_named(name: str) -> KnowledgeBase | None:
    return db.session.scalar(db.select(KnowledgeBase).where(KnowledgeBase.name == name))


@pytest.mark.parametrize(("folder", "reason"), [
    ("/etc", "KNOWLEDGE_FOLDERS"), ("/", "KNOWLEDGE_FOLDERS"), ("{root}/../outside", "KNOWLEDGE_FOLDERS"),
    ("{root}/../shared-not", "KNOWLEDGE_FOLDERS"), ("relative/docs", "absolute path"),
    ("{root}/missing", "is not a folder"),
])
def test_a_folder_outside_the_allowed_ones_is_a_422_beside_the_field(app, client, auth, allowed, folder, reason):
    (allowed.parent / "outside").mkdir(exist_ok=True)
    (allowed.parent / "shared-not").mkdir(exist_ok=True)
    auth.login_as("admin")
    response = client.post("/admin/knowledge/", data={"name": "Server files", "roles": ["user"],
                                                      "folder": folder.format(root=allowed)})
    assert response.status_code == 422
    assert reason in error_beside(response.text, "folder")
    with app.app_context():
        assert kb_named("Server files") is None


def test_a_folder_inside_an_allowed_one_and_the_docs_folder_are_saved(app, client, auth, allowed):
    (allowed / "team").mkdir()
    auth.login_as("admin")
    docs = Path(app.root_path).parent / "docs"
    for name, folder in (("Team", allowed / "team"), ("Shared", allowed), ("Docs", docs)):
        response = client.post("/admin/knowledge/", data={"name": name, "roles": ["user"], "folder": str(folder)})
        assert response.status_code == 302, (name, error_beside(response.text, "folder"))


def test_sync_refuses_a_folder_that_is_no_longer_allowed(app, client, auth, allowed):
    with app.app_context():
        kb = KnowledgeBase(name="Old", roles=["user"], folder="/etc")  # stored before the rule, or by hand
        db.session.add(kb)
        db.session.commit()
        kb_id = kb.id
    auth.login_as("admin")
    response = client.post(f"/admin/knowledge/{kb_id}/sync")
    assert response.status_code == 422 and "KNOWLEDGE_FOLDERS" in error_beside(response.text, "folder")
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(KnowledgeDocument.id))) == 0


def test_the_indexing_job_does_not_sync_a_never_synced_folder_outside_the_allowed_ones(app, allowed):
    outside = allowed.parent / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe root password.")
    with app.app_context():
        kb = KnowledgeBase(name="Old", roles=["user"], folder=str(outside))  # stored before the rule, or by hand
        db.session.add(kb)
        db.session.commit()
        index_knowledge_base.delay(kb.id)
        assert db.session.scalar(db.select(db.func.count(KnowledgeDocument.id))) == 0
        kb.folder = str(allowed)
        db.session.commit()
        index_knowledge_base.delay(kb.id)  # inline in tests; an allowed folder is still synced by the job
        assert db.session.scalar(db.select(db.func.count(KnowledgeDocument.id))) == 1


def test_a_symlink_out_of_the_folder_is_not_read(app, allowed, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's secret")
    (allowed / "notes.txt").symlink_to(secret)
    (allowed / "inside.md").symlink_to(allowed / "guide.md")  # a link within the folder is a document
    (allowed / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    with app.app_context():
        kb = KnowledgeBase(name="Shared", roles=["user"], folder=str(allowed))
        db.session.add(kb)
        db.session.commit()
        counts = sync_folder(kb)
        sources = set(db.session.scalars(db.select(KnowledgeDocument.source)))
        texts = " ".join(db.session.scalars(db.select(KnowledgeDocument.content)))
    assert sources == {"folder:guide.md", "folder:inside.md"}
    assert "secret" not in texts and counts["skipped"] == 1


def deep_folder(root: Path, length: int) -> Path:
    """A real folder under root whose path is at least `length` characters."""
    path = root
    while len(str(path)) < length:
        path = path / ("d" * 100)
    path.mkdir(parents=True)
    return path


def test_a_folder_path_too_long_to_keep_is_a_422(app, client, auth, allowed):
    auth.login_as("admin")
    response = client.post("/admin/knowledge/", data={"name": "Deep", "roles": ["user"],
                                                      "folder": str(deep_folder(allowed, 501))})
    assert response.status_code == 422 and "at most 500 characters" in error_beside(response.text, "folder")


def test_a_file_whose_path_is_too_long_to_keep_is_skipped(app, allowed):
    (deep_folder(allowed, len(str(allowed)) + 600) / "far.md").write_text("# Far\n\nAway.")
    with app.app_context():
        kb = KnowledgeBase(name="Shared", roles=["user"], folder=str(allowed))
        db.session.add(kb)
        db.session.commit()
        counts = sync_folder(kb)
        assert set(db.session.scalars(db.select(KnowledgeDocument.source))) == {"folder:guide.md"}
    assert counts["skipped"] == 1 and counts["added"] == 1
