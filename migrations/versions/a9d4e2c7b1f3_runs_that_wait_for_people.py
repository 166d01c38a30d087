"""runs that wait for people: waiting statuses, deadlines, approvers, trigger timeouts, notifications

Revision ID: a9d4e2c7b1f3
Revises: a91d3c5e7f20
Create Date: 2026-12-10 09:00:00

A run that ends on calls waiting for a person is `waiting` (with what it waits for) until they are
decided. Waiting calls get a deadline and an outbox mark for their notifications; agents name approvers;
triggers get an owner, a timeout and its choice, and a notification webhook; notifications are an outbox.
Runs stored before this revision keep their status: a waiting call of theirs has no deadline.
"""
from alembic import op
import sqlalchemy as sa



revision = 'a9d4e2c7b1f3'
down_revision = 'a91d3c5e7f20'
branch_labels = None
depends_on = None


def upgrade():
    # Plain ADD COLUMN (no table rebuild): the runs table has a partial unique index a rebuild could lose.
    op.add_column('runs', sa.Column('waiting_for', sa.String(length=12), nullable=True))
    op.add_column('runs', sa.Column('origin_run_id', sa.String(length=32), nullable=True))
    op.create_index('ix_runs_origin_run_id', 'runs', ['origin_run_id'], unique=False)

    op.add_column('pending_calls', sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True))
    op.add_column('pending_calls', sa.Column('notified_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index('ix_pending_calls_status_expires_at', 'pending_calls', ['status', 'expires_at'], unique=False)

    op.add_column('agents', sa.Column('approver_roles', sa.JSON(), nullable=True))
    op.add_column('agents', sa.Column('approver_ids', sa.JSON(), nullable=True))

    with op.batch_alter_table('triggers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('decision_timeout_minutes', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('on_timeout', sa.String(length=10), server_default='deny', nullable=False))
        batch_op.add_column(sa.Column('notify_url', sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column('notify_arguments', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.create_foreign_key(batch_op.f('fk_triggers_owner_id_users'), 'users', ['owner_id'], ['id'],
                                    ondelete='SET NULL')

    op.create_table(
        'notifications',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.String(length=32), nullable=False),
        sa.Column('message_id', sa.Integer(), nullable=True),
        sa.Column('channel', sa.String(length=10), nullable=False),
        sa.Column('recipient', sa.String(length=254), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=True),
        sa.Column('trigger_id', sa.Integer(), nullable=True),
        sa.Column('status', sa.String(length=10), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('attempted_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_notifications_run_id_runs'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['message_id'], ['messages.id'], name=op.f('fk_notifications_message_id_messages'),
                                ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_notifications_user_id_users'),
                                ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['trigger_id'], ['triggers.id'], name=op.f('fk_notifications_trigger_id_triggers'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_notifications')),
    )
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_notifications_run_id'), ['run_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_notifications_status'), ['status'], unique=False)


def downgrade():
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_notifications_status'))
        batch_op.drop_index(batch_op.f('ix_notifications_run_id'))
    op.drop_table('notifications')
    with op.batch_alter_table('triggers', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_triggers_owner_id_users'), type_='foreignkey')
        batch_op.drop_column('notify_arguments')
        batch_op.drop_column('notify_url')
        batch_op.drop_column('on_timeout')
        batch_op.drop_column('decision_timeout_minutes')
        batch_op.drop_column('owner_id')
    op.drop_column('agents', 'approver_ids')
    op.drop_column('agents', 'approver_roles')
    op.drop_index('ix_pending_calls_status_expires_at', table_name='pending_calls')
    op.drop_column('pending_calls', 'notified_at')
    op.drop_column('pending_calls', 'expires_at')
    op.drop_index('ix_runs_origin_run_id', table_name='runs')
    op.drop_column('runs', 'origin_run_id')
    op.drop_column('runs', 'waiting_for')
