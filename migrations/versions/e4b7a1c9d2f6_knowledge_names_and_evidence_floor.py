"""knowledge names and the evidence floor: passages' compound names in the lexical index; min_score retired

Revision ID: e4b7a1c9d2f6
Revises: d4b8e2f61a37
Create Date: 2026-12-03 12:00:00

`knowledge_passages.names` holds the forms of the compound names of a passage (app/knowledge/names.py), and
both lexical indexes read it beside `embedded`: the SQLite triggers write `embedded` and `names` into
`knowledge_fts`, the PostgreSQL `search_vector` is generated from both (the names weighted A). Passages indexed before keep an
empty `names` until the indexing job cuts their document again (CHUNKER_VERSION 3 makes it do so).

The knowledge skill's `min_score` setting (a floor on the rank-fused score, 0 by default) is gone: the
evidence floor (`min_similarity`, `min_word_share`) replaces it, so it is removed from stored agents' skills.
A floor above 0 is not carried over: a fused score has no meaning the new floor could take.
"""
import json

from alembic import op
import sqlalchemy as sa


revision = 'e4b7a1c9d2f6'
down_revision = 'd4b8e2f61a37'
branch_labels = None
depends_on = None

TRIGGERS = ("knowledge_fts_insert", "knowledge_fts_delete", "knowledge_fts_update")


def _sqlite_triggers(indexed: str, update_of: str) -> None:
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("CREATE TRIGGER knowledge_fts_insert AFTER INSERT ON knowledge_passages BEGIN "
               "INSERT INTO knowledge_fts(rowid, embedded, knowledge_base_id) "
               f"VALUES (new.id, {indexed}, new.knowledge_base_id); END")
    op.execute("CREATE TRIGGER knowledge_fts_delete AFTER DELETE ON knowledge_passages BEGIN "
               "DELETE FROM knowledge_fts WHERE rowid = old.id; END")
    op.execute(f"CREATE TRIGGER knowledge_fts_update AFTER UPDATE OF {update_of} ON knowledge_passages BEGIN "
               f"UPDATE knowledge_fts SET embedded = {indexed} WHERE rowid = old.id; END")


def _postgresql_search_vector(expression: str) -> None:
    op.execute("DROP INDEX IF EXISTS ix_knowledge_passages_search")
    op.execute("ALTER TABLE knowledge_passages DROP COLUMN IF EXISTS search_vector")
    op.execute(f"ALTER TABLE knowledge_passages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({expression}) STORED")
    op.execute("CREATE INDEX ix_knowledge_passages_search ON knowledge_passages USING gin (search_vector)")


def _skills_without(key: str) -> None:
    agents = sa.table("agents", sa.column("id", sa.Integer), sa.column("skills", sa.JSON))
    connection = op.get_bind()
    for agent_id, skills in connection.execute(sa.select(agents.c.id, agents.c.skills)).all():
        if isinstance(skills, str):  # a JSON column read back as text by some drivers
            skills = json.loads(skills)
        changed = False
        for entry in skills or []:
            config = entry.get("config") if isinstance(entry, dict) and entry.get("name") == "knowledge" else None
            if isinstance(config, dict) and key in config:
                del config[key]
                changed = True
        if changed:
            connection.execute(agents.update().where(agents.c.id == agent_id).values(skills=skills))


def upgrade():
    # A plain ADD COLUMN (no batch copy of the table), so the triggers on knowledge_passages stay.
    op.add_column("knowledge_passages", sa.Column("names", sa.Text(), nullable=False, server_default=""))
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _sqlite_triggers("new.embedded || char(10) || new.names", "embedded, names")
    elif dialect == "postgresql":
        # ts_rank_cd has no IDF, so a name would weigh no more than its words scattered in prose: the names
        # are weight A (1.0 in ts_rank_cd's default weights), the text D (0.1).
        _postgresql_search_vector("setweight(to_tsvector('english', names), 'A') || "
                                  "setweight(to_tsvector('english', embedded), 'D')")
    _skills_without("min_score")


def downgrade():
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _sqlite_triggers("new.embedded", "embedded")
    elif dialect == "postgresql":
        _postgresql_search_vector("to_tsvector('english', embedded)")
    with op.batch_alter_table("knowledge_passages") as batch_op:
        batch_op.drop_column("names")
    if dialect == "sqlite":  # the batch copy of the table dropped its triggers
        _sqlite_triggers("new.embedded", "embedded")
