"""The names migration on a database of the previous revision: stored knowledge settings lose `min_score`
(validated by the skill's Config, which no longer knows it), and the lexical triggers index the names."""

from __future__ import annotations

import json

import flask_migrate
from sqlalchemy import text

from app import create_app
from app.extensions import db
from app.models import Agent
from app.skills.knowledge import skill

BEFORE = "c7e1f0a2b9d4"


def test_the_migration_retires_min_score_and_indexes_names(tmp_path):
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'old.sqlite3'}", "SECRET_KEY": "x",
                      "JOBS_IMMEDIATE": True, "JOBS_SQLITE_PATH": str(tmp_path / "jobs.sqlite3"),
                      "CHROMA_PATH": str(tmp_path / "chroma")})
    with app.app_context():
        flask_migrate.upgrade(revision=BEFORE)
        skills = [{"name": "knowledge", "config": {"results": 4, "min_score": 0.4}},
                  {"name": "clock", "config": {"min_score": "not ours"}}]
        db.session.execute(text("INSERT INTO agents (name, description, instructions, roles, skills, max_requests, "
                                "created_at, updated_at) VALUES ('Old', '', '', '[]', :skills, 5, "
                                "'2026-01-01', '2026-01-01')"), {"skills": json.dumps(skills)})
        db.session.commit()
        flask_migrate.upgrade()
        stored = db.session.scalar(db.select(Agent).where(Agent.name == "Old")).skills
        assert stored == [{"name": "knowledge", "config": {"results": 4}}, skills[1]]
        assert skill.parse(stored[0]["config"]).results == 4  # valid again for the Config
        db.session.execute(text(
            "INSERT INTO knowledge_bases (id, name, description, roles, chunk_size, chunk_overlap, created_at) "
            "VALUES (1, 'Kb', '', '[]', 1000, 150, '2026-01-01')"))
        db.session.execute(text(
            "INSERT INTO knowledge_documents (id, knowledge_base_id, title, source, content, content_hash, status, "
            "passage_count, passages_done, chunker_version, created_at, updated_at) "
            "VALUES (1, 1, 'T', 'upload:t', 'x', '', 'indexed', 1, 1, 3, '2026-01-01', '2026-01-01')"))
        db.session.execute(text(
            "INSERT INTO knowledge_passages (id, document_id, knowledge_base_id, position, start, \"end\", heading, "
            "text, embedded, names, chunker_version, vectorised, meta) VALUES (1, 1, 1, 0, 0, 1, '', "
            "'See OUTBOUND_ALLOWED_HOSTS', 'See OUTBOUND_ALLOWED_HOSTS', 'outboundallowedhosts', 3, 1, '{}')"))
        db.session.commit()
        match = "SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH :q"
        assert db.session.scalars(text(match), {"q": '"outboundallowedhosts"'}).all() == [1]
        db.session.execute(text("UPDATE knowledge_passages SET names = 'othername' WHERE id = 1"))
        db.session.commit()
        assert db.session.scalars(text(match), {"q": '"othername"'}).all() == [1]
        flask_migrate.downgrade(revision=BEFORE)
        db.session.execute(text("UPDATE knowledge_passages SET embedded = 'plain words' WHERE id = 1"))
        db.session.commit()
        assert db.session.scalars(text(match), {"q": '"plain"'}).all() == [1]  # the old triggers are back
        db.engine.dispose()
