"""A case's fixture in its disposable app: tables with rows, and knowledge bases indexed there."""

from __future__ import annotations

from typing import Any

from app.evals.dataset import Case
from app.evals.placeholders import resolve
from app.extensions import db
from app.knowledge.indexing import index_document
from app.knowledge.library import content_hash
from app.models import KnowledgeBase, KnowledgeDocument
from app.tables import records, schema


def create_tables(case: Case, pages: str | None = None) -> dict[str, int]:
    """Create the case's tables and fields, then their rows; return each table's id by name.

    Every table exists before the first row, so a row may name any table's id or the case's pages
    (placeholders, app/evals/placeholders.py). Raise ValueError on a row the table refuses.
    """
    definitions = []
    for table in case.fixture:
        definition = schema.create_table(table.name, table.label or table.name)
        for item in table.fields:
            schema.add_field(definition, item.name, item.name, item.kind, choices=item.choices)
        db.session.commit()
        definitions.append((table, definition))
    ids = {table.name: definition.id for table, definition in definitions}
    for table, definition in definitions:
        for row in table.rows:
            values, errors = records.validate(definition, resolve(row, ids, pages))
            if errors:
                raise ValueError(f"fixture row of {table.name} is invalid: {errors}")
            records.insert_row(definition, values)
    return ids


def create_knowledge(case: Case) -> None:
    """Create the case's knowledge bases and index every document (passages, lexical rows, vectors).

    It runs inside the case's app, so the rows go to its database and the vectors to its own vector
    store (CHROMA_PATH in the case's folder), both deleted with the case.
    """
    for fixture in case.knowledge:
        kb = KnowledgeBase(name=fixture.name, roles=fixture.roles)
        db.session.add(kb)
        db.session.flush()
        for number, item in enumerate(fixture.documents, start=1):
            document = KnowledgeDocument(knowledge_base_id=kb.id, source=f"evaluation:{number}", title=item.title,
                                         content=item.text, content_hash=content_hash(item.title + "\n" + item.text),
                                         status="pending")
            db.session.add(document)
            db.session.commit()
            if not index_document(document):
                raise ValueError(f"the document {item.title!r} of {fixture.name} was not indexed")


def skills_for(case: Case, skills: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The skills the case runs with: the knowledge skill searches the case's knowledge bases when it asks."""
    names = [kb.name for kb in case.knowledge if kb.skill]
    if not names:
        return skills
    kept = [dict(skill) for skill in skills if skill.get("name") != "knowledge"]
    existing = next((skill for skill in skills if skill.get("name") == "knowledge"), None)
    config = {**((existing or {}).get("config") or {}), "knowledge_bases": names}
    return [*kept, {"name": "knowledge", "config": config}]
