"""model configurations: retries

Revision ID: d2fcb98238db
Revises: 5b2e7c1d9a40
Create Date: 2026-12-01 21:14:20

How often the provider's SDK may resend a failed request, within the configuration's timeout.
Existing configurations get 0: the timeout they show is the time a user waits.
"""
from alembic import op
import sqlalchemy as sa


revision = 'd2fcb98238db'
down_revision = '5b2e7c1d9a40'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('model_configs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('retries', sa.Integer(), server_default='0', nullable=False))


def downgrade():
    with op.batch_alter_table('model_configs', schema=None) as batch_op:
        batch_op.drop_column('retries')
