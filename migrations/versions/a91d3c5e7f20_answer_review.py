"""answer_review: an agent's "never ask" tools after untrusted content, and a run's error detail for admins

Revision ID: a91d3c5e7f20
Revises: e4a9c2d7f613
Create Date: 2026-12-03 12:00:00

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'a91d3c5e7f20'
down_revision = 'e4a9c2d7f613'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('agents') as batch:
        batch.add_column(sa.Column('never_ask', sa.JSON(), nullable=True))
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('error_detail', sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('error_detail')
    with op.batch_alter_table('agents') as batch:
        batch.drop_column('never_ask')
