"""eval_observed: what an evaluation case observed beyond its transcript, and case ids with their transport

Revision ID: d4b8e2f61a37
Revises: a9d4e2c7b1f3
Create Date: 2026-12-03 15:00:00

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'd4b8e2f61a37'
down_revision = 'a9d4e2c7b1f3'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('eval_case_results') as batch:
        batch.add_column(sa.Column('observed', sa.JSON(), nullable=True))
        batch.alter_column('case_id', existing_type=sa.String(length=80), type_=sa.String(length=100),
                           existing_nullable=False)


def downgrade():
    with op.batch_alter_table('eval_case_results') as batch:
        batch.alter_column('case_id', existing_type=sa.String(length=100), type_=sa.String(length=80),
                           existing_nullable=False)
        batch.drop_column('observed')
