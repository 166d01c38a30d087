"""one active run per conversation

Revision ID: 5b2e7c1d9a40
Revises: 86d5e03f51aa
Create Date: 2026-11-30 01:30:00

A conversation has at most one queued or running run. Older active runs of a conversation that has
several (left by a crash or by two sends at once) are marked failed before the index is created.
"""
from alembic import op
import sqlalchemy as sa


revision = '5b2e7c1d9a40'
down_revision = '86d5e03f51aa'
branch_labels = None
depends_on = None

ACTIVE = "status IN ('queued', 'running')"


def upgrade():
    op.execute(sa.text(f"""
        UPDATE runs SET status = 'failed', error = 'Another run of this conversation was started at the same time.'
        WHERE {ACTIVE} AND EXISTS (
            SELECT 1 FROM runs AS newer
            WHERE newer.conversation_id = runs.conversation_id AND newer.status IN ('queued', 'running')
              AND (newer.created_at > runs.created_at OR (newer.created_at = runs.created_at AND newer.id > runs.id)))
    """))
    op.create_index('uq_runs_one_active_per_conversation', 'runs', ['conversation_id'], unique=True,
                    sqlite_where=sa.text(ACTIVE), postgresql_where=sa.text(ACTIVE))


def downgrade():
    op.drop_index('uq_runs_one_active_per_conversation', table_name='runs',
                  sqlite_where=sa.text(ACTIVE), postgresql_where=sa.text(ACTIVE))
