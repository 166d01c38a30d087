"""knowledge_fts_terms: each indexed term's passage count, read by the lexical search (SQLite)

Revision ID: c7e1f0a2b9d4
Revises: fe7dbb4a1ebe
Create Date: 2026-12-02 00:55:00

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = 'c7e1f0a2b9d4'
down_revision = 'fe7dbb4a1ebe'
branch_labels = None
depends_on = None


def upgrade():
    # An fts5vocab table stores nothing: it reads knowledge_fts's own index.
    if op.get_bind().dialect.name == "sqlite":
        op.execute("CREATE VIRTUAL TABLE knowledge_fts_terms USING fts5vocab(knowledge_fts, 'row')")


def downgrade():
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS knowledge_fts_terms")
