"""tokens scoped to agents and scopes, agents' slugs, ephemeral conversations, MCP sessions

Revision ID: e4a9c2d7f613
Revises: c7e1f0a2b9d4
Create Date: 2026-12-04 10:00:00

A token now has a set of scopes (read, chat, openai, mcp), names the agents it opens (all of its
user's by default), a rate limit and its last use. An existing `read` token keeps `["read"]`, a
`chat` token `["read", "chat"]`, and both keep opening every agent. Agents get a slug (their model
id in /v1/ and their MCP path), made from their names; conversations an `ephemeral` flag; MCP
sessions a table.
"""
import re
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = 'e4a9c2d7f613'
down_revision = 'c7e1f0a2b9d4'
branch_labels = None
depends_on = None


def _slug(name):
    # Frozen copy of app.models.agents.slug_of as of this revision.
    ascii_name = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name).strip("-")[:60].strip("-") or "agent"


def upgrade():
    bind = op.get_bind()
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scopes', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('all_agents', sa.Boolean(), server_default=sa.true(), nullable=False))
        batch_op.add_column(sa.Column('rate_limit', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True))
    tokens = sa.table('api_tokens', sa.column('id', sa.Integer), sa.column('scope', sa.String),
                      sa.column('scopes', sa.JSON))
    for token_id, scope in bind.execute(sa.select(tokens.c.id, tokens.c.scope)).all():
        bind.execute(tokens.update().where(tokens.c.id == token_id)
                     .values(scopes=["read", "chat"] if scope == "chat" else ["read"]))
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.alter_column('scopes', existing_type=sa.JSON(), nullable=False)
        batch_op.drop_column('scope')

    op.create_table('api_token_agents',
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_api_token_agents_agent_id_agents'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_api_token_agents_token_id_api_tokens'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('token_id', 'agent_id', name=op.f('pk_api_token_agents'))
    )
    with op.batch_alter_table('api_token_agents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_token_agents_agent_id'), ['agent_id'], unique=False)

    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('slug', sa.String(length=80), nullable=True))
    agents = sa.table('agents', sa.column('id', sa.Integer), sa.column('name', sa.String),
                      sa.column('slug', sa.String))
    taken = set()
    for agent_id, name in bind.execute(sa.select(agents.c.id, agents.c.name).order_by(agents.c.id)).all():
        base = slug = _slug(name)
        n = 2
        while slug in taken:
            slug, n = f"{base}-{n}", n + 1
        taken.add(slug)
        bind.execute(agents.update().where(agents.c.id == agent_id).values(slug=slug))
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.alter_column('slug', existing_type=sa.String(length=80), nullable=False)
        batch_op.create_unique_constraint(batch_op.f('uq_agents_slug'), ['slug'])

    with op.batch_alter_table('conversations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ephemeral', sa.Boolean(), server_default=sa.false(), nullable=False))

    op.create_table('mcp_sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('protocol_version', sa.String(length=20), nullable=False),
    sa.Column('client', sa.String(length=200), nullable=False),
    sa.Column('calls', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_mcp_sessions_agent_id_agents'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_mcp_sessions_token_id_api_tokens'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mcp_sessions')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_mcp_sessions_key_hash'))
    )
    with op.batch_alter_table('mcp_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mcp_sessions_token_id'), ['token_id'], unique=False)


def downgrade():
    with op.batch_alter_table('mcp_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mcp_sessions_token_id'))
    op.drop_table('mcp_sessions')
    with op.batch_alter_table('conversations', schema=None) as batch_op:
        batch_op.drop_column('ephemeral')
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('uq_agents_slug'), type_='unique')
        batch_op.drop_column('slug')
    with op.batch_alter_table('api_token_agents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_token_agents_agent_id'))
    op.drop_table('api_token_agents')
    bind = op.get_bind()
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scope', sa.String(length=10), server_default='read', nullable=False))
    tokens = sa.table('api_tokens', sa.column('id', sa.Integer), sa.column('scope', sa.String),
                      sa.column('scopes', sa.JSON))
    for token_id, scopes in bind.execute(sa.select(tokens.c.id, tokens.c.scopes)).all():
        bind.execute(tokens.update().where(tokens.c.id == token_id)
                     .values(scope="chat" if "chat" in (scopes or []) else "read"))
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_column('last_used_at')
        batch_op.drop_column('rate_limit')
        batch_op.drop_column('all_agents')
        batch_op.drop_column('scopes')
